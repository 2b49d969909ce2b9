//! One `.npy` array: its header (written as numpy writes it, parsed from
//! numpy's output) and its little-endian values.

use std::io::{self, Read, Write};

use super::{shape_text, NpyArray};

/// The `.npy` v1.0 header (v2.0 if it would not fit), padded with spaces
/// so that the data starts on a 64-byte boundary, as numpy writes it.
pub(super) fn npy_header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let shape = match shape {
        [] => "()".to_string(),
        [n] => format!("({n},)"),
        dims => {
            let dims: Vec<String> = dims.iter().map(usize::to_string).collect();
            format!("({})", dims.join(", "))
        }
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let build = |prefix: usize| {
        let unpadded = prefix + dict.len() + 1;
        let padding = unpadded.next_multiple_of(64) - unpadded;
        format!("{dict}{}\n", " ".repeat(padding))
    };
    let mut out = b"\x93NUMPY".to_vec();
    let text = build(10);
    if let Ok(len) = u16::try_from(text.len()) {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    } else {
        let text = build(12);
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    out
}

/// Writes the values little-endian through a small buffer, so no copy of
/// the whole array is made.
pub(super) fn write_values<T: Copy, const N: usize>(
    w: &mut dyn Write,
    data: &[T],
    to_le: fn(T) -> [u8; N],
) -> io::Result<()> {
    let mut buffer = Vec::with_capacity(64 * 1024);
    for chunk in data.chunks(64 * 1024 / N) {
        buffer.clear();
        for &v in chunk {
            buffer.extend_from_slice(&to_le(v));
        }
        w.write_all(&buffer)?;
    }
    Ok(())
}

/// The element types we read and what they become.
#[derive(Clone, Copy)]
enum Dtype {
    F4,
    F8,
    I4,
    I8,
}

impl Dtype {
    fn parse(descr: &str) -> Result<Dtype, String> {
        match descr {
            "<f4" => Ok(Dtype::F4),
            "<f8" => Ok(Dtype::F8),
            "<i4" => Ok(Dtype::I4),
            "<i8" => Ok(Dtype::I8),
            d if d.starts_with('>') => Err(format!(
                "is big-endian ('{d}'); save it little-endian, e.g. with .astype('<f4')"
            )),
            d => Err(format!(
                "has dtype '{d}'; only float32, float64, int32 and int64 ('<f4', '<f8', '<i4', '<i8') are supported"
            )),
        }
    }

    fn size(self) -> usize {
        match self {
            Dtype::F4 | Dtype::I4 => 4,
            Dtype::F8 | Dtype::I8 => 8,
        }
    }
}

/// One `.npy` stream of `size` bytes; errors finish the sentence
/// "array 'x' …".
pub(super) fn read_npy(r: &mut dyn Read, size: u64) -> Result<NpyArray, String> {
    let truncated = |e: io::Error| match e.kind() {
        io::ErrorKind::UnexpectedEof => "is truncated".to_string(),
        _ => format!("cannot be read ({e})"),
    };
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic).map_err(truncated)?;
    if &magic[..6] != b"\x93NUMPY" {
        return Err("is not a .npy array (bad magic bytes)".into());
    }
    let header_len = match magic[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).map_err(truncated)?;
            usize::from(u16::from_le_bytes(b))
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).map_err(truncated)?;
            u32::from_le_bytes(b) as usize
        }
        v => {
            return Err(format!(
                "uses .npy format version {v}, which is not supported"
            ))
        }
    };
    // numpy itself refuses headers over 10 000 bytes unless told otherwise.
    if header_len > 1 << 20 || header_len as u64 > size {
        return Err("has a damaged header".into());
    }
    let mut header = vec![0u8; header_len];
    r.read_exact(&mut header).map_err(truncated)?;
    let header = String::from_utf8(header).map_err(|_| "has a damaged header".to_string())?;
    let (descr, fortran, shape) = parse_header(&header)?;
    let dtype = Dtype::parse(&descr)?;
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err("is stored in Fortran order; save numpy.ascontiguousarray(a) instead".into());
    }
    let count = shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or("has an impossibly large shape")?;
    let data_bytes = count
        .checked_mul(dtype.size())
        .ok_or("has an impossibly large shape")?;
    if (data_bytes as u64).saturating_add(header_len as u64) > size {
        return Err(format!(
            "is truncated: shape {} needs {data_bytes} bytes",
            shape_text(&shape)
        ));
    }
    let fail = |e: Option<io::Error>| match e {
        Some(e) => truncated(e),
        None => format!("is too large to load ({data_bytes} bytes)"),
    };
    Ok(match dtype {
        Dtype::F4 => NpyArray::F32 {
            data: read_values(r, count, f32::from_le_bytes, |v| v).map_err(fail)?,
            shape,
        },
        Dtype::F8 => NpyArray::F32 {
            data: read_values(r, count, f64::from_le_bytes, |v| v as f32).map_err(fail)?,
            shape,
        },
        Dtype::I4 => NpyArray::I64 {
            data: read_values(r, count, i32::from_le_bytes, i64::from).map_err(fail)?,
            shape,
        },
        Dtype::I8 => NpyArray::I64 {
            data: read_values(r, count, i64::from_le_bytes, |v| v).map_err(fail)?,
            shape,
        },
    })
}

/// Reads `count` little-endian values of N bytes in chunks, converting each;
/// `Err(None)` if memory for them cannot be reserved.
fn read_values<T, U, const N: usize>(
    r: &mut dyn Read,
    count: usize,
    from_le: fn([u8; N]) -> T,
    convert: fn(T) -> U,
) -> Result<Vec<U>, Option<io::Error>> {
    let mut out = Vec::new();
    // try_reserve: a damaged header must not abort the process.
    out.try_reserve_exact(count).map_err(|_| None)?;
    let mut buffer = vec![0u8; (64 * 1024 / N) * N];
    let mut left = count;
    while left > 0 {
        let n = left.min(buffer.len() / N);
        let bytes = &mut buffer[..n * N];
        r.read_exact(bytes).map_err(Some)?;
        out.extend(bytes.chunks_exact(N).map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            convert(from_le(a))
        }));
        left -= n;
    }
    Ok(out)
}

/// Parses the Python dict literal of a `.npy` header into its descr,
/// fortran_order and shape.
pub(super) fn parse_header(text: &str) -> Result<(String, bool, Vec<usize>), String> {
    let damaged = || "has a damaged header".to_string();
    let mut p = Parser {
        chars: text.chars().peekable(),
    };
    p.expect('{').ok_or_else(damaged)?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_space();
        if p.eat('}') {
            break;
        }
        let key = p.string().ok_or_else(damaged)?;
        p.expect(':').ok_or_else(damaged)?;
        p.skip_space();
        match key.as_str() {
            "descr" => match p.chars.peek() {
                Some('[') => {
                    return Err("has a structured dtype, which is not supported".into());
                }
                _ => descr = Some(p.string().ok_or_else(damaged)?),
            },
            "fortran_order" => fortran = Some(p.boolean().ok_or_else(damaged)?),
            "shape" => shape = Some(p.tuple().ok_or_else(damaged)?),
            _ => return Err(damaged()),
        }
        p.skip_space();
        p.eat(',');
    }
    match (descr, fortran, shape) {
        (Some(d), Some(f), Some(s)) => Ok((d, f, s)),
        _ => Err(damaged()),
    }
}

struct Parser<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.chars.next_if(|c| c.is_whitespace()).is_some() {}
    }

    fn eat(&mut self, c: char) -> bool {
        self.chars.next_if_eq(&c).is_some()
    }

    fn expect(&mut self, c: char) -> Option<()> {
        self.skip_space();
        self.eat(c).then_some(())
    }

    fn string(&mut self) -> Option<String> {
        self.skip_space();
        let quote = self.chars.next_if(|&c| c == '\'' || c == '"')?;
        let mut out = String::new();
        loop {
            match self.chars.next()? {
                c if c == quote => return Some(out),
                '\\' => out.push(self.chars.next()?),
                c => out.push(c),
            }
        }
    }

    fn boolean(&mut self) -> Option<bool> {
        let word: String =
            std::iter::from_fn(|| self.chars.next_if(|c| c.is_ascii_alphabetic())).collect();
        match word.as_str() {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        }
    }

    /// A tuple of non-negative integers, allowing Python 2's `3L`.
    fn tuple(&mut self) -> Option<Vec<usize>> {
        self.expect('(')?;
        let mut dims = Vec::new();
        loop {
            self.skip_space();
            if self.eat(')') {
                return Some(dims);
            }
            let digits: String =
                std::iter::from_fn(|| self.chars.next_if(|c| c.is_ascii_digit())).collect();
            dims.push(digits.parse().ok()?);
            self.eat('L');
            self.skip_space();
            if !self.eat(',') {
                self.expect(')')?;
                return Some(dims);
            }
        }
    }
}
