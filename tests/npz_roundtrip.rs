//! The `.npz` reader against a real `numpy.savez_compressed` file (the
//! reference fixture, values checked with numpy), and the writer against
//! the reader: what we write reads back bit for bit. That numpy itself
//! reads our files was checked by hand with numpy 2.4 on the copy this
//! test leaves in the temp folder (`headscope-exports/harbour.roundtrip.npz`).

use std::io::Write;
use std::path::{Path, PathBuf};

use headscope::captures::HeadId;
use headscope::npz::{
    read_captures_npz, read_npz, write_captures_npz, write_npz, NpyArray, NpyView,
};

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/harbour.minilm.npz")
}

/// Values printed by numpy (`repr` of float32, shortest round trip).
#[test]
fn reads_numpy_savez_compressed() {
    let arrays = read_npz(&fixture_path()).unwrap();
    let keys: Vec<&str> = arrays.keys().map(String::as_str).collect();
    assert_eq!(keys, ["attentions", "heads", "input_ids", "similarity"]);
    assert_eq!(arrays["input_ids"].shape(), [65]);
    assert_eq!(arrays["attentions"].shape(), [6, 12, 65, 65]);
    assert_eq!(arrays["heads"].shape(), [6, 12, 65, 32]);
    assert_eq!(arrays["similarity"].shape(), [6, 12, 65, 65]);

    let ids = arrays["input_ids"].as_i64().unwrap();
    assert_eq!(&ids[..4], [101, 1996, 7440, 2001]);
    assert_eq!(ids[64], 102);

    let at = |name: &str, index: [usize; 4]| {
        let array = &arrays[name];
        let shape = array.shape();
        let flat = ((index[0] * shape[1] + index[1]) * shape[2] + index[2]) * shape[3] + index[3];
        array.as_f32().unwrap()[flat]
    };
    assert_eq!(at("attentions", [0, 0, 0, 0]), 0.099765144);
    assert_eq!(at("attentions", [5, 11, 64, 63]), 0.010773233);
    assert_eq!(at("attentions", [2, 3, 10, 20]), 0.009061154);
    assert_eq!(at("similarity", [3, 0, 0, 0]), 0.050170403);
    assert_eq!(at("similarity", [3, 0, 10, 5]), 0.8898806);
    assert_eq!(at("similarity", [5, 11, 64, 64]), 3.1239166);
    assert_eq!(at("heads", [0, 0, 0, 0]), 0.00560959);
    assert_eq!(at("heads", [5, 11, 64, 31]), -0.28029785);
    assert_eq!(at("heads", [1, 2, 3, 4]), -0.50917405);

    // Every attention row is a probability distribution.
    for row in arrays["attentions"].as_f32().unwrap().chunks(65) {
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "row sums to {sum}");
    }
}

#[test]
fn reads_the_fixture_as_captures() {
    let (ids, captures) = read_captures_npz(&fixture_path()).unwrap();
    assert_eq!(ids.len(), 65);
    assert_eq!(
        (
            captures.layers,
            captures.heads,
            captures.tokens,
            captures.head_dim
        ),
        (6, 12, 65, 32)
    );
    assert_eq!(
        captures.similarity(HeadId::new(3, 0))[10 * 65 + 5],
        0.8898806
    );
    assert_eq!(
        captures.attention(HeadId::new(5, 11))[64 * 65 + 63],
        0.010773233
    );
    assert_eq!(
        captures.head_output(HeadId::new(1, 2))[3 * 32 + 4],
        -0.50917405
    );
}

#[test]
fn written_arrays_read_back_bit_for_bit() {
    let original = read_npz(&fixture_path()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("copy.npz");
    let views: Vec<(&str, NpyView<'_>)> = original
        .iter()
        .map(|(k, v)| (k.as_str(), v.view()))
        .collect();
    write_npz(&path, &views).unwrap();
    let again = read_npz(&path).unwrap();
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        original.keys().collect::<Vec<_>>()
    );
    for (key, array) in &original {
        // Compare bits, so NaN or -0.0 would count too.
        match (array, &again[key]) {
            (
                NpyArray::F32 {
                    shape: s1,
                    data: d1,
                },
                NpyArray::F32 {
                    shape: s2,
                    data: d2,
                },
            ) => {
                assert_eq!(s1, s2);
                assert!(
                    d1.iter().zip(d2).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{key} differs"
                );
            }
            (a, b) => assert_eq!(a, b),
        }
    }

    // And through the captures API, with exactly the §6 keys.
    let (ids, captures) = read_captures_npz(&fixture_path()).unwrap();
    let path = dir.path().join("captures.npz");
    write_captures_npz(&path, &ids, &captures).unwrap();
    let arrays = read_npz(&path).unwrap();
    assert_eq!(
        arrays.keys().collect::<Vec<_>>(),
        ["attentions", "heads", "input_ids", "similarity"]
    );
    assert!(matches!(arrays["input_ids"], NpyArray::I64 { .. }));
    assert_eq!(read_captures_npz(&path).unwrap(), (ids, captures));

    // A copy kept for checking with numpy by hand.
    let keep = std::env::temp_dir().join("headscope-exports");
    std::fs::create_dir_all(&keep).unwrap();
    std::fs::copy(&path, keep.join("harbour.roundtrip.npz")).unwrap();
}

#[test]
fn odd_shapes_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.npz");
    let values = [f32::NAN, -0.0, f32::INFINITY, 1e-45, -f32::MAX, 0.1];
    let ints = [i64::MIN, -1, 0, i64::MAX];
    write_npz(
        &path,
        &[
            (
                "scalar",
                NpyView::F32 {
                    shape: vec![],
                    data: &values[5..],
                },
            ),
            (
                "empty",
                NpyView::F32 {
                    shape: vec![0, 3],
                    data: &[],
                },
            ),
            (
                "floats",
                NpyView::F32 {
                    shape: vec![2, 3],
                    data: &values,
                },
            ),
            (
                "ints",
                NpyView::I64 {
                    shape: vec![4],
                    data: &ints,
                },
            ),
        ],
    )
    .unwrap();
    let arrays = read_npz(&path).unwrap();
    assert_eq!(
        arrays["scalar"],
        NpyArray::F32 {
            shape: vec![],
            data: vec![0.1]
        }
    );
    assert_eq!(arrays["empty"].shape(), [0, 3]);
    let floats = arrays["floats"].as_f32().unwrap();
    assert!(floats
        .iter()
        .zip(values)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    assert_eq!(arrays["ints"].as_i64().unwrap(), ints);
}

/// A `.npy` stream as numpy would write it.
fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn deflated_npz(path: &Path, members: &[(&str, Vec<u8>)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

#[test]
fn converts_float64_and_int32() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.npz");
    let f8: Vec<u8> = [0.5f64, -2.25, 1e300]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let i4: Vec<u8> = [7i32, -8, i32::MAX]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    deflated_npz(
        &path,
        &[
            ("f8.npy", npy("<f8", "(3,)", &f8)),
            ("i4.npy", npy("<i4", "(1, 3)", &i4)),
            ("notes.txt", b"not an array".to_vec()),
        ],
    );
    let arrays = read_npz(&path).unwrap();
    assert_eq!(
        arrays.len(),
        2,
        "non-.npy members are skipped, as numpy does"
    );
    assert_eq!(
        arrays["f8"],
        NpyArray::F32 {
            shape: vec![3],
            data: vec![0.5, -2.25, f32::INFINITY]
        }
    );
    assert_eq!(
        arrays["i4"],
        NpyArray::I64 {
            shape: vec![1, 3],
            data: vec![7, -8, i64::from(i32::MAX)]
        }
    );
}

#[test]
fn bad_files_are_refused_in_plain_words() {
    let dir = tempfile::tempdir().unwrap();
    let message = |path: &Path| read_npz(path).unwrap_err().to_string();

    let missing = dir.path().join("missing.npz");
    assert_eq!(
        message(&missing),
        format!("cannot read {}: the file does not exist", missing.display())
    );

    let text = dir.path().join("text.npz");
    std::fs::write(&text, "hello").unwrap();
    assert!(message(&text).starts_with(&format!(
        "cannot read {}: not an .npz (zip) file",
        text.display()
    )));

    let big_endian = dir.path().join("big.npz");
    deflated_npz(&big_endian, &[("x.npy", npy(">f4", "(1,)", &[0, 0, 0, 0]))]);
    let text = message(&big_endian);
    assert!(text.contains("array 'x' is big-endian"), "{text}");

    let unsigned = dir.path().join("u8.npz");
    deflated_npz(&unsigned, &[("x.npy", npy("|u1", "(2,)", &[1, 2]))]);
    assert!(message(&unsigned).contains("array 'x' has dtype '|u1'"));

    let short = dir.path().join("short.npz");
    deflated_npz(
        &short,
        &[("x.npy", npy("<f4", "(1000000000, 1000)", &[0; 8]))],
    );
    assert!(
        message(&short).contains("array 'x' is truncated"),
        "{}",
        message(&short)
    );

    // Writing: inconsistent arrays and unwritable places.
    let out = dir.path().join("out.npz");
    let error = write_npz(
        &out,
        &[(
            "x",
            NpyView::F32 {
                shape: vec![2, 2],
                data: &[1.0],
            },
        )],
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "cannot write {}: array 'x' has shape 2×2 but 1 values",
            out.display()
        )
    );
    let error = write_npz(
        &out,
        &[
            (
                "x",
                NpyView::I64 {
                    shape: vec![0],
                    data: &[],
                },
            ),
            (
                "x",
                NpyView::I64 {
                    shape: vec![0],
                    data: &[],
                },
            ),
        ],
    )
    .unwrap_err();
    assert!(error.to_string().contains("two arrays are named 'x'"));
    let nowhere = dir.path().join("no").join("out.npz");
    let error = write_npz(&nowhere, &[]).unwrap_err();
    assert!(error.to_string().contains("does not exist"), "{error}");
    assert!(!out.exists());
}
