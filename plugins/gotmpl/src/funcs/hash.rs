//! Hashes and encodings: sprig's sha*/adler32/base64/base32 and syncweave's
//! (api-syncagent's) `sha3sum`, `sha3short` and `shortHash`. The last three
//! are also public: the naming plugin names objects with them.

use base64::Engine;
use sha1::Digest;

use super::{Entry, Ty, sig, str_arg};
use crate::value::Value;

pub(crate) const FUNCS: &[Entry] = &[
    ("sha1sum", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(hex::encode(sha1::Sha1::digest(
            str_arg(&a[0]).as_bytes(),
        ))))
    }),
    ("sha256sum", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(hex::encode(sha2::Sha256::digest(
            str_arg(&a[0]).as_bytes(),
        ))))
    }),
    ("sha512sum", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(hex::encode(sha2::Sha512::digest(
            str_arg(&a[0]).as_bytes(),
        ))))
    }),
    ("adler32sum", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(adler32(str_arg(&a[0]).as_bytes()).to_string()))
    }),
    ("sha3sum", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(sha3sum(str_arg(&a[0]))))
    }),
    ("sha3short", sig(&[Ty::Str], Some(Ty::Int)), |a| {
        sha3short_func(str_arg(&a[0]), &a[1..]).map(Value::from)
    }),
    ("shortHash", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(short_hash(str_arg(&a[0]))))
    }),
    ("b64enc", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(
            base64::engine::general_purpose::STANDARD.encode(str_arg(&a[0])),
        ))
    }),
    ("b64dec", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(b64dec(str_arg(&a[0]))))
    }),
    ("b32enc", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(b32enc(str_arg(&a[0]).as_bytes())))
    }),
    ("b32dec", sig(&[Ty::Str], None), |a| {
        Ok(Value::from(b32dec(str_arg(&a[0]))))
    }),
];

/// SHA3-256 as hex.
pub fn sha3sum(s: &str) -> String {
    hex::encode(sha3::Sha3_256::digest(s.as_bytes()))
}

/// How many hex characters of SHA3-256 [`sha3short`] keeps.
const SHA3SHORT_LEN: usize = 20;

/// The first 20 hex characters of SHA3-256: api-syncagent's naming hash (the
/// default service-cluster name is `sha3short(namespace)-sha3short(name)`).
pub fn sha3short(s: &str) -> String {
    let mut h = sha3sum(s);
    h.truncate(SHA3SHORT_LEN);
    h
}

/// The `sha3short STR [LEN]` template function: the first LEN (default 20)
/// hex characters of SHA3-256.
fn sha3short_func(s: &str, lengths: &[Value]) -> Result<String, String> {
    let length = match lengths {
        [] => return Ok(sha3short(s)),
        [n] => n.as_int().unwrap_or(0),
        more => {
            return Err(format!(
                "sha3short: expected at most one length argument, got {}",
                more.len()
            ));
        }
    };
    if length <= 0 {
        return Err(format!("sha3short: invalid length {length}"));
    }
    let h = sha3sum(s);
    Ok(h[..(length as usize).min(h.len())].to_string())
}

/// The first 20 hex characters of SHA-1 (api-syncagent's legacy naming).
pub fn short_hash(s: &str) -> String {
    hex::encode(sha1::Sha1::digest(s.as_bytes()))[..20].to_string()
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Go's base64.StdEncoding decoding; sprig returns the error text on failure.
fn b64dec(s: &str) -> String {
    let bytes = s.as_bytes();
    // Go ignores \r and \n in the input.
    let cleaned: Vec<u8> = bytes
        .iter()
        .copied()
        .filter(|c| *c != b'\r' && *c != b'\n')
        .collect();
    match base64::engine::general_purpose::STANDARD.decode(&cleaned) {
        Ok(d) => String::from_utf8_lossy(&d).into_owned(),
        Err(e) => {
            let off = match e {
                base64::DecodeError::InvalidByte(i, _)
                | base64::DecodeError::InvalidLastSymbol(i, _) => i,
                base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidPadding => {
                    // Go reports the offset where the incomplete quantum starts.
                    cleaned.len() - cleaned.len() % 4
                }
            };
            format!("illegal base64 data at input byte {off}")
        }
    }
}

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn b32enc(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for i in 0..8 {
            if i < chars {
                out.push(B32[((n >> (35 - 5 * i)) & 31) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn b32dec(s: &str) -> String {
    let cleaned: Vec<u8> = s.bytes().filter(|c| *c != b'\r' && *c != b'\n').collect();
    let mut out = Vec::new();
    for (ci, chunk) in cleaned.chunks(8).enumerate() {
        if chunk.len() != 8 {
            return format!(
                "illegal base32 data at input byte {}",
                ci * 8 + chunk.len().min(8) - chunk.len() % 8
            );
        }
        let mut n: u64 = 0;
        let mut valid = 8;
        for (i, &c) in chunk.iter().enumerate() {
            let v = if c == b'=' {
                if valid == 8 {
                    valid = i;
                }
                0
            } else {
                if valid != 8 {
                    return format!("illegal base32 data at input byte {}", ci * 8 + i);
                }
                match B32.iter().position(|&x| x == c) {
                    Some(p) => p as u64,
                    None => return format!("illegal base32 data at input byte {}", ci * 8 + i),
                }
            };
            n = (n << 5) | v;
        }
        let bytes = match valid {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => return format!("illegal base32 data at input byte {}", ci * 8 + valid),
        };
        let all = n.to_be_bytes();
        out.extend_from_slice(&all[3..3 + bytes]);
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_vectors() {
        assert_eq!(sha3short("objnamespace"), "2928c2aa0e510f017f07");
        assert_eq!(sha3short("objname"), "73d08a1ba188f1340dae");
        assert_eq!(
            sha3short_func("objname", &[]).unwrap(),
            "73d08a1ba188f1340dae"
        );
        assert_eq!(
            sha3short_func("objname", &[Value::Int(8)]).unwrap(),
            "73d08a1b"
        );
        assert_eq!(sha3short_func("x", &[Value::Int(100)]).unwrap().len(), 64);
        assert!(sha3short_func("x", &[Value::Int(0)]).is_err());
        assert_eq!(short_hash("test").len(), 20);
        assert_eq!(short_hash("objname").len(), 20);
        assert_eq!(short_hash(""), "da39a3ee5e6b4b0d3255");
    }

    #[test]
    fn checksums_and_encodings() {
        assert_eq!(adler32(b"Wikipedia"), 300_286_872);
        assert_eq!(b32enc(b"foobar"), "MZXW6YTBOI======");
        assert_eq!(b32dec("MZXW6YTBOI======"), "foobar");
        assert_eq!(b64dec("aGVsbG8="), "hello");
        assert_eq!(b64dec("aGVsbG8"), "illegal base64 data at input byte 4");
    }
}
