//! LZF decompression (Redis `lzf_d.c` format), for RDB strings saved compressed
//! (`rdbcompression yes`, the default, compresses strings longer than 20 bytes).
//!
//! The compressed stream is a sequence of runs, each introduced by a control byte:
//!
//! ```text
//! 000LLLLL  <L+1 literal bytes>                  literal run, 1..=32 bytes
//! LLLooooo  oooooooo                             back reference, L in 1..=6:
//!                                                copy L+2 bytes from
//!                                                out_pos - ((o12 << 8 | o8) + 1)
//! 111ooooo  LLLLLLLL  oooooooo                   back reference with L = 7 + next byte
//! ```
//!
//! A reference may overlap what it produces (a run of one repeated byte), so it is
//! copied byte by byte. Everything is checked: a literal or reference that would read
//! past the input, point before the output's start, or write past the declared length
//! is an error, and the output must be exactly the declared length.

/// Why a compressed string could not be expanded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LzfError {
    /// The input ended inside a run.
    Truncated,
    /// A back reference points before the start of the output.
    BadReference,
    /// The output would exceed, or did not reach, the declared length.
    WrongLength,
}

/// Expands `input` into exactly `out_len` bytes.
pub fn decompress(input: &[u8], out_len: usize) -> Result<Vec<u8>, LzfError> {
    let mut out = Vec::with_capacity(out_len);
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = usize::from(input[ip]);
        ip += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            let lit = input.get(ip..ip + n).ok_or(LzfError::Truncated)?;
            if out.len() + n > out_len {
                return Err(LzfError::WrongLength);
            }
            out.extend_from_slice(lit);
            ip += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += usize::from(*input.get(ip).ok_or(LzfError::Truncated)?);
                ip += 1;
            }
            len += 2;
            let low = usize::from(*input.get(ip).ok_or(LzfError::Truncated)?);
            ip += 1;
            let back = ((ctrl & 0x1f) << 8) + low + 1;
            if back > out.len() {
                return Err(LzfError::BadReference);
            }
            if out.len() + len > out_len {
                return Err(LzfError::WrongLength);
            }
            let from = out.len() - back;
            if back >= len {
                out.extend_from_within(from..from + len);
            } else {
                // Overlapping: the copy reads bytes it has just written.
                for i in 0..len {
                    let b = out[from + i];
                    out.push(b);
                }
            }
        }
    }
    if out.len() != out_len {
        return Err(LzfError::WrongLength);
    }
    Ok(out)
}

/// The largest expansion LZF allows: a 3-byte reference yields at most 264 bytes.
/// A declared length beyond this ratio is a lie, refused before allocating.
pub const MAX_RATIO: usize = 88;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_run() {
        assert_eq!(decompress(&[2, b'a', b'b', b'c'], 3), Ok(b"abc".to_vec()));
    }

    #[test]
    fn overlapping_back_reference_repeats_a_byte() {
        // "a" then copy 7 bytes from 1 back (short form: L = 5 → 7 bytes).
        let input = [0, b'a', 5 << 5, 0];
        assert_eq!(decompress(&input, 8), Ok(b"aaaaaaaa".to_vec()));
    }

    #[test]
    fn long_back_reference() {
        // "ab" then L = 7 + 3 = 10 → 12 bytes from 2 back.
        let input = [1, b'a', b'b', 7 << 5, 3, 1];
        assert_eq!(decompress(&input, 14), Ok(b"ababababababab".to_vec()));
    }

    #[test]
    fn long_run_of_one_byte() {
        // 'a', then a long reference: L = 7 + 12 → 21 bytes from 1 back.
        let input = [0x00, b'a', 0xe0, 12, 0x00];
        assert_eq!(decompress(&input, 22), Ok(vec![b'a'; 22]));
    }

    #[test]
    fn bad_inputs_are_refused() {
        assert_eq!(decompress(&[5, b'a'], 6), Err(LzfError::Truncated));
        assert_eq!(decompress(&[1 << 5, 0], 3), Err(LzfError::BadReference));
        assert_eq!(decompress(&[0, b'a'], 2), Err(LzfError::WrongLength));
        assert_eq!(decompress(&[1, b'a', b'b'], 1), Err(LzfError::WrongLength));
        assert_eq!(decompress(&[0, b'a', 7 << 5], 20), Err(LzfError::Truncated));
    }
}
