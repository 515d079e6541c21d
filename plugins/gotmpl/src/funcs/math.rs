//! Sprig's arithmetic. Integer functions convert arguments with
//! spf13/cast and wrap on overflow like Go's int64; the `...f` functions
//! compute in decimal (shopspring/decimal) so `addf 1.1 2.2` is 3.3.

use super::{Entry, Ty, int_arg, sig, to_float64, to_int64};
use crate::value::Value;

pub(crate) const FUNCS: &[Entry] = &[
    ("add1", sig(&[Ty::Any], None), |a| {
        Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))
    }),
    ("add", sig(&[], Some(Ty::Any)), |a| {
        Ok(Value::Int64(
            a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
        ))
    }),
    ("sub", sig(&[Ty::Any, Ty::Any], None), |a| {
        Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
    }),
    ("mul", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        Ok(Value::Int64(
            a[1..]
                .iter()
                .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
        ))
    }),
    ("div", sig(&[Ty::Any, Ty::Any], None), |a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(Value::Int64(to_int64(&a[0]).wrapping_div(d)))
    }),
    ("mod", sig(&[Ty::Any, Ty::Any], None), |a| {
        let d = to_int64(&a[1]);
        if d == 0 {
            return Err("runtime error: integer divide by zero".into());
        }
        Ok(Value::Int64(to_int64(&a[0]).wrapping_rem(d)))
    }),
    ("max", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        Ok(Value::Int64(a.iter().map(to_int64).max().unwrap_or(0)))
    }),
    ("biggest", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        Ok(Value::Int64(a.iter().map(to_int64).max().unwrap_or(0)))
    }),
    ("min", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        Ok(Value::Int64(a.iter().map(to_int64).min().unwrap_or(0)))
    }),
    ("maxf", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        Ok(Value::Float(
            a[1..]
                .iter()
                .fold(to_float64(&a[0]), |acc, v| go_max(acc, to_float64(v))),
        ))
    }),
    ("minf", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        Ok(Value::Float(
            a[1..]
                .iter()
                .fold(to_float64(&a[0]), |acc, v| go_min(acc, to_float64(v))),
        ))
    }),
    ("ceil", sig(&[Ty::Any], None), |a| {
        Ok(Value::Float(to_float64(&a[0]).ceil()))
    }),
    ("floor", sig(&[Ty::Any], None), |a| {
        Ok(Value::Float(to_float64(&a[0]).floor()))
    }),
    ("round", sig(&[Ty::Any, Ty::Int], Some(Ty::Float)), round),
    ("add1f", sig(&[Ty::Any], None), |a| {
        decimal_op(&a[0], &[Value::Int(1)], Op::Add)
    }),
    ("addf", sig(&[], Some(Ty::Any)), |a| {
        decimal_op(&Value::Float(0.0), &a, Op::Add)
    }),
    ("subf", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        decimal_op(&a[0], &a[1..], Op::Sub)
    }),
    ("mulf", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        decimal_op(&a[0], &a[1..], Op::Mul)
    }),
    ("divf", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        decimal_op(&a[0], &a[1..], Op::Div)
    }),
];

/// Go's math.Max: NaN wins, +0 beats -0.
fn go_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        return if a.is_sign_negative() { b } else { a };
    }
    a.max(b)
}

fn go_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        return if a.is_sign_negative() { a } else { b };
    }
    a.min(b)
}

fn round(a: Vec<Value>) -> Result<Value, String> {
    let round_on = match a.get(2) {
        Some(Value::Float(f)) => *f,
        _ => 0.5,
    };
    let val = to_float64(&a[0]);
    let pow = 10f64.powf(int_arg(&a[1]) as f64);
    let digit = pow * val;
    let frac = digit - digit.trunc();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    Ok(Value::Float(r / pow))
}

#[derive(Clone, Copy)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

/// A decimal `m × 10^e`, exact while it fits in an i128.
#[derive(Clone, Copy, Debug)]
struct Dec {
    m: i128,
    e: i32,
}

impl Dec {
    /// The shortest decimal that round-trips to `f` (shopspring's NewFromFloat).
    fn from_f64(f: f64) -> Option<Dec> {
        if !f.is_finite() {
            return None;
        }
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e')?;
        let exp: i32 = exp.parse().ok()?;
        let neg = mant.starts_with('-');
        let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
        let frac_len = mant
            .split_once('.')
            .map(|(_, f)| f.len() as i32)
            .unwrap_or(0);
        let m: i128 = digits.parse().ok()?;
        Some(Dec {
            m: if neg { -m } else { m },
            e: exp - frac_len,
        })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.m, self.e).parse().unwrap_or(f64::NAN)
    }

    fn scale_to(self, e: i32) -> Option<Dec> {
        // Only scales down the exponent (multiplies the mantissa).
        let diff = u32::try_from(self.e - e).ok()?;
        let f = 10i128.checked_pow(diff)?;
        Some(Dec {
            m: self.m.checked_mul(f)?,
            e,
        })
    }

    fn add(self, o: Dec) -> Option<Dec> {
        let e = self.e.min(o.e);
        let (a, b) = (self.scale_to(e)?, o.scale_to(e)?);
        Some(Dec {
            m: a.m.checked_add(b.m)?,
            e,
        })
    }

    fn mul(self, o: Dec) -> Option<Dec> {
        Some(Dec {
            m: self.m.checked_mul(o.m)?,
            e: self.e.checked_add(o.e)?,
        })
    }

    /// Division rounded half away from zero to 16 decimal places.
    fn div(self, o: Dec) -> Option<Dec> {
        const PREC: i32 = 16;
        // self/o = (self.m / o.m) * 10^(self.e - o.e); want mantissa at 10^-PREC.
        let shift = self.e - o.e + PREC;
        let (num, den) = if shift >= 0 {
            (self.m.checked_mul(10i128.checked_pow(shift as u32)?)?, o.m)
        } else {
            (
                self.m,
                o.m.checked_mul(10i128.checked_pow((-shift) as u32)?)?,
            )
        };
        let q = num / den;
        let r = num % den;
        let q = if r.checked_abs()?.checked_mul(2)? >= den.checked_abs()? {
            if (num < 0) != (den < 0) { q - 1 } else { q + 1 }
        } else {
            q
        };
        Some(Dec { m: q, e: -PREC })
    }
}

fn decimal_op(first: &Value, rest: &[Value], op: Op) -> Result<Value, String> {
    for v in std::iter::once(first).chain(rest) {
        let x = to_float64(v);
        if !x.is_finite() {
            return Err(format!(
                "Cannot create a Decimal from {}",
                crate::gofmt::format_float(x, 'g', -1)
            ));
        }
    }
    let mut acc_f = to_float64(first);
    let mut acc = Dec::from_f64(acc_f);
    for v in rest {
        let x = to_float64(v);
        if let Op::Div = op
            && x == 0.0
        {
            return Err("decimal division by 0".into());
        }
        let d = Dec::from_f64(x);
        acc = match (acc, d) {
            (Some(a), Some(b)) => match op {
                Op::Add => a.add(b),
                Op::Sub => a.add(Dec { m: -b.m, e: b.e }),
                Op::Mul => a.mul(b),
                Op::Div => a.div(b),
            },
            _ => None,
        };
        // Past i128 range the exact result cannot matter at f64 precision.
        acc_f = match acc {
            Some(a) => a.to_f64(),
            None => match op {
                Op::Add => acc_f + x,
                Op::Sub => acc_f - x,
                Op::Mul => acc_f * x,
                Op::Div => acc_f / x,
            },
        };
        if acc.is_none() {
            acc = Dec::from_f64(acc_f);
        }
    }
    Ok(Value::Float(acc.map(Dec::to_f64).unwrap_or(acc_f)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> Value {
        Value::Float(v)
    }

    fn num(v: Value) -> f64 {
        match v {
            Value::Float(x) => x,
            other => panic!("expected float, got {other:?}"),
        }
    }

    #[test]
    fn decimal_float_ops_are_exact() {
        assert_eq!(
            num(decimal_op(&f(0.0), &[f(1.1), f(2.2)], Op::Add).unwrap()),
            3.3
        );
        assert_eq!(num(decimal_op(&f(0.3), &[f(0.1)], Op::Sub).unwrap()), 0.2);
        assert_eq!(num(decimal_op(&f(1.1), &[f(3.0)], Op::Mul).unwrap()), 3.3);
        assert_eq!(
            num(decimal_op(&f(10.0), &[f(3.0)], Op::Div).unwrap()),
            3.3333333333333335
        );
        assert!(decimal_op(&f(1.0), &[f(0.0)], Op::Div).is_err());
    }

    #[test]
    fn round_like_sprig() {
        assert_eq!(num(round(vec![f(4.56789), Value::Int(2)]).unwrap()), 4.57);
        assert_eq!(num(round(vec![f(2.5), Value::Int(0)]).unwrap()), 3.0);
        assert_eq!(num(round(vec![f(-1.5), Value::Int(0)]).unwrap()), -2.0);
        assert_eq!(
            num(round(vec![f(1.23), Value::Int(1), f(0.2)]).unwrap()),
            1.3
        );
    }
}
