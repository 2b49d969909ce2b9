//! Parquet corpora: a file's rows as documents, the text from one column
//! (`--text-field`, default `text`) and the id from another (`--id-field`,
//! default `id`) when the file has it. Hugging Face datasets are stored
//! this way. Only top-level string (or binary) columns are read; nested
//! columns are left alone.

use super::documents::{skip_reason, DocumentRef, DocumentText, Locator, SourceOptions};
use crate::textfile::decode_text;
use parquet::basic::Type as PhysicalType;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::serialized_reader::ReadOptionsBuilder;
use parquet::record::reader::RowIter;
use parquet::record::Field;
use parquet::schema::types::{SchemaDescriptor, Type, TypePtr};
use std::fs::File;
use std::path::{Path, PathBuf};

fn open(path: &Path, first_group: usize) -> Result<SerializedFileReader<File>, String> {
    let file = File::open(path).map_err(|e| crate::textfile::describe_io_error(&e))?;
    let options = ReadOptionsBuilder::new()
        .with_predicate(Box::new(move |_, index| index >= first_group))
        .build();
    SerializedFileReader::new_with_options(file, options)
        .map_err(|e| format!("not a readable Parquet file: {e}"))
}

/// The top-level field `name`, if the file has it.
fn field(schema: &SchemaDescriptor, name: &str) -> Option<TypePtr> {
    schema
        .root_schema()
        .get_fields()
        .iter()
        .find(|f| f.name() == name)
        .cloned()
}

/// The text column: a top-level string or binary column; the index of its
/// leaf and the field itself.
fn text_column(schema: &SchemaDescriptor, name: &str) -> Result<(usize, TypePtr), String> {
    let Some(text) = field(schema, name) else {
        let names: Vec<&str> = schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| f.name())
            .collect();
        return Err(format!(
            "no column \"{name}\" (it has: {}); name the text column (--text-field, or Text field in the corpus window)",
            names.join(", ")
        ));
    };
    if !text.is_primitive() || text.get_physical_type() != PhysicalType::BYTE_ARRAY {
        return Err(format!(
            "its column \"{name}\" does not hold strings; name the text column (--text-field, or Text field in the corpus window)"
        ));
    }
    let leaf = schema
        .columns()
        .iter()
        .position(|c| c.path().parts() == [name.to_string()])
        .ok_or_else(|| format!("its column \"{name}\" has no data"))?;
    Ok((leaf, text))
}

/// The rows of a Parquet file as documents, sized from its metadata: each
/// row group's uncompressed text bytes spread evenly over its rows.
pub(super) fn list_rows(
    path: &Path,
    source: usize,
    options: &SourceOptions,
) -> Result<Vec<DocumentRef>, String> {
    let reader = open(path, 0)?;
    let metadata = reader.metadata();
    let (leaf, _) = text_column(metadata.file_metadata().schema_descr(), &options.text_field)?;
    let mut documents = Vec::new();
    let mut first_row = 0u64;
    for group in metadata.row_groups() {
        let rows = group.num_rows().max(0) as u64;
        let size = group.column(leaf).uncompressed_size().max(0) as u64;
        for row in 0..rows {
            documents.push(DocumentRef {
                source,
                locator: Locator::Row(first_row + row),
                bytes: size * (row + 1) / rows - size * row / rows,
            });
        }
        first_row += rows;
    }
    Ok(documents)
}

/// Reads rows front to back, from the row group holding the first row asked
/// for (the groups before it are not decoded).
pub struct RowReader {
    path: PathBuf,
    /// The first row of each row group.
    group_starts: Vec<u64>,
    /// The text (and id) columns.
    projection: Type,
    rows: Option<RowIter<'static>>,
    /// The row `rows` gives next.
    next_row: u64,
}

impl RowReader {
    pub fn open(path: &Path, options: &SourceOptions) -> Result<Self, String> {
        let reader = open(path, 0)?;
        let metadata = reader.metadata();
        let schema = metadata.file_metadata().schema_descr();
        let (_, text) = text_column(schema, &options.text_field)?;
        let mut fields = vec![text];
        if let Some(id) = field(schema, &options.id_field) {
            if id.is_primitive() && options.id_field != options.text_field {
                fields.push(id);
            }
        }
        let projection = Type::group_type_builder(schema.root_schema().name())
            .with_fields(fields)
            .build()
            .map_err(|e| format!("cannot read its columns: {e}"))?;
        let mut group_starts = Vec::new();
        let mut start = 0u64;
        for group in metadata.row_groups() {
            group_starts.push(start);
            start += group.num_rows().max(0) as u64;
        }
        Ok(Self {
            path: path.to_path_buf(),
            group_starts,
            projection,
            rows: None,
            next_row: 0,
        })
    }

    /// Starts reading at the row group that holds `row`.
    fn seek(&mut self, row: u64) -> Result<(), String> {
        let group = self.group_starts.partition_point(|&start| start <= row);
        let group = group.saturating_sub(1);
        let reader = open(&self.path, group)?;
        let rows = RowIter::from_file_into(Box::new(reader))
            .project(Some(self.projection.clone()))
            .map_err(|e| format!("cannot read its columns: {e}"))?;
        self.rows = Some(rows);
        self.next_row = self.group_starts.get(group).copied().unwrap_or(0);
        Ok(())
    }

    /// The text of row `row` (rows are asked for in increasing order).
    pub fn read(
        &mut self,
        row: u64,
        options: &SourceOptions,
        default_id: String,
    ) -> Result<DocumentText, String> {
        if self.rows.is_none() || row < self.next_row {
            self.seek(row)?;
        }
        let rows = self.rows.as_mut().expect("seek opened the rows");
        let mut found = None;
        while self.next_row <= row {
            let next = rows.next();
            self.next_row += 1;
            match next {
                None => {
                    self.rows = None;
                    return Err("the file has fewer rows than its metadata says".into());
                }
                Some(Err(e)) => {
                    // Start afresh for the next row asked for.
                    self.rows = None;
                    return Err(format!("cannot read the row: {e}"));
                }
                Some(Ok(record)) if self.next_row > row => found = Some(record),
                Some(Ok(_)) => {}
            }
        }
        let record = found.ok_or("the row was not found")?;
        let mut text = None;
        let mut id = None;
        for (name, value) in record.get_column_iter() {
            if *name == options.text_field {
                text = Some(match value {
                    Field::Str(text) => text.clone(),
                    Field::Bytes(bytes) => {
                        let decoded =
                            decode_text(bytes.data(), &default_id).map_err(|e| skip_reason(&e))?;
                        if decoded.warning.is_some() {
                            return Err("its text is not UTF-8".into());
                        }
                        decoded.text
                    }
                    Field::Null => return Err(format!("its \"{name}\" value is null")),
                    other => return Err(format!("its \"{name}\" value is not a string: {other}")),
                });
            } else if *name == options.id_field {
                id = match value {
                    Field::Str(id) => Some(id.clone()),
                    Field::Null => None,
                    other => Some(other.to_string()),
                };
            }
        }
        let text = text.ok_or_else(|| format!("no \"{}\" value", options.text_field))?;
        if text.trim().is_empty() {
            return Err("empty or blank".into());
        }
        Ok(DocumentText {
            id: id.unwrap_or(default_id),
            text,
            warning: None,
        })
    }
}
