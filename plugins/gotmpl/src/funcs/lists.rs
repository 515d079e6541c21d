//! Sprig's list functions.

use super::{Entry, Ty, int_arg, sig, to_int64};
use crate::funcs::convert::empty;
use crate::value::{Value, deep_equal};

pub(crate) const FUNCS: &[Entry] = &[
    ("list", sig(&[], Some(Ty::Any)), |a| Ok(Value::from(a))),
    ("tuple", sig(&[], Some(Ty::Any)), |a| Ok(Value::from(a))),
    ("append", sig(&[Ty::Any, Ty::Any], None), |a| {
        push(&a, "push")
    }),
    ("push", sig(&[Ty::Any, Ty::Any], None), |a| push(&a, "push")),
    ("mustAppend", sig(&[Ty::Any, Ty::Any], None), |a| {
        push(&a, "push")
    }),
    ("mustPush", sig(&[Ty::Any, Ty::Any], None), |a| {
        push(&a, "push")
    }),
    ("prepend", sig(&[Ty::Any, Ty::Any], None), prepend),
    ("mustPrepend", sig(&[Ty::Any, Ty::Any], None), prepend),
    ("first", sig(&[Ty::Any], None), |a| {
        Ok(items(&a[0], "find first")?
            .first()
            .cloned()
            .unwrap_or(Value::Nil))
    }),
    ("mustFirst", sig(&[Ty::Any], None), |a| {
        Ok(items(&a[0], "find first")?
            .first()
            .cloned()
            .unwrap_or(Value::Nil))
    }),
    ("last", sig(&[Ty::Any], None), |a| {
        Ok(items(&a[0], "find last")?
            .last()
            .cloned()
            .unwrap_or(Value::Nil))
    }),
    ("mustLast", sig(&[Ty::Any], None), |a| {
        Ok(items(&a[0], "find last")?
            .last()
            .cloned()
            .unwrap_or(Value::Nil))
    }),
    ("rest", sig(&[Ty::Any], None), |a| rest(&a[0])),
    ("mustRest", sig(&[Ty::Any], None), |a| rest(&a[0])),
    ("initial", sig(&[Ty::Any], None), |a| initial(&a[0])),
    ("mustInitial", sig(&[Ty::Any], None), |a| initial(&a[0])),
    ("reverse", sig(&[Ty::Any], None), |a| reverse(&a[0])),
    ("mustReverse", sig(&[Ty::Any], None), |a| reverse(&a[0])),
    ("uniq", sig(&[Ty::Any], None), |a| uniq(&a[0])),
    ("mustUniq", sig(&[Ty::Any], None), |a| uniq(&a[0])),
    ("compact", sig(&[Ty::Any], None), |a| compact(&a[0])),
    ("mustCompact", sig(&[Ty::Any], None), |a| compact(&a[0])),
    ("without", sig(&[Ty::Any], Some(Ty::Any)), without),
    ("mustWithout", sig(&[Ty::Any], Some(Ty::Any)), without),
    ("has", sig(&[Ty::Any, Ty::Any], None), has),
    ("mustHas", sig(&[Ty::Any, Ty::Any], None), has),
    ("slice", sig(&[Ty::Any], Some(Ty::Any)), slice),
    ("mustSlice", sig(&[Ty::Any], Some(Ty::Any)), slice),
    ("concat", sig(&[], Some(Ty::Any)), concat),
    ("chunk", sig(&[Ty::Int, Ty::Any], None), chunk),
    ("mustChunk", sig(&[Ty::Int, Ty::Any], None), chunk),
    ("until", sig(&[Ty::Int], None), |a| {
        let n = int_arg(&a[0]);
        until_step(0, n, if n < 0 { -1 } else { 1 }).map(int_list)
    }),
    ("untilStep", sig(&[Ty::Int, Ty::Int, Ty::Int], None), |a| {
        until_step(int_arg(&a[0]), int_arg(&a[1]), int_arg(&a[2])).map(int_list)
    }),
    ("seq", sig(&[], Some(Ty::Int)), seq),
];

/// Go's `reflect.Kind` name used in sprig's "Cannot ... on type" errors.
fn items(v: &Value, what: &str) -> Result<Vec<Value>, String> {
    match v {
        Value::List(l) => Ok(l.as_ref().clone()),
        Value::Missing | Value::Nil => Err(format!("Cannot {what} on type invalid")),
        other => Err(format!("Cannot {what} on type {}", other.kind_name())),
    }
}

fn push(a: &[Value], what: &str) -> Result<Value, String> {
    let mut l = items(&a[0], what)?;
    l.push(a[1].clone());
    Ok(Value::from(l))
}

fn prepend(a: Vec<Value>) -> Result<Value, String> {
    let mut l = items(&a[0], "prepend")?;
    l.insert(0, a[1].clone());
    Ok(Value::from(l))
}

fn rest(v: &Value) -> Result<Value, String> {
    let l = items(v, "find rest")?;
    Ok(Value::from(l.into_iter().skip(1).collect::<Vec<_>>()))
}

fn initial(v: &Value) -> Result<Value, String> {
    let mut l = items(v, "find initial")?;
    l.pop();
    Ok(Value::from(l))
}

fn reverse(v: &Value) -> Result<Value, String> {
    let mut l = items(v, "find reverse")?;
    l.reverse();
    Ok(Value::from(l))
}

fn uniq(v: &Value) -> Result<Value, String> {
    let mut out: Vec<Value> = Vec::new();
    for e in items(v, "find uniq")? {
        if !out.iter().any(|o| deep_equal(o, &e)) {
            out.push(e);
        }
    }
    Ok(Value::from(out))
}

fn compact(v: &Value) -> Result<Value, String> {
    Ok(Value::from(
        items(v, "compact")?
            .into_iter()
            .filter(|e| !empty(e))
            .collect::<Vec<_>>(),
    ))
}

fn without(a: Vec<Value>) -> Result<Value, String> {
    let omit = &a[1..];
    Ok(Value::from(
        items(&a[0], "find without")?
            .into_iter()
            .filter(|e| !omit.iter().any(|o| deep_equal(o, e)))
            .collect::<Vec<_>>(),
    ))
}

fn has(a: Vec<Value>) -> Result<Value, String> {
    if a[1].is_nil() {
        return Ok(Value::Bool(false));
    }
    let l = items(&a[1], "find has")?;
    Ok(Value::Bool(l.iter().any(|e| deep_equal(&a[0], e))))
}

fn slice(a: Vec<Value>) -> Result<Value, String> {
    let l = match &a[0] {
        Value::List(l) => l.as_ref().clone(),
        Value::Missing | Value::Nil => {
            return Err("list should be type of slice or array but invalid".into());
        }
        other => {
            return Err(format!(
                "list should be type of slice or array but {}",
                other.kind_name()
            ));
        }
    };
    if l.is_empty() {
        return Ok(Value::Nil);
    }
    let start = a.get(1).map(to_int64).unwrap_or(0);
    let end = if a.len() < 3 {
        l.len() as i64
    } else {
        to_int64(&a[2])
    };
    if start < 0 || end < start || end > l.len() as i64 {
        return Err("reflect.Value.Slice: slice index out of bounds".into());
    }
    Ok(Value::from(l[start as usize..end as usize].to_vec()))
}

fn concat(a: Vec<Value>) -> Result<Value, String> {
    let mut out = Vec::new();
    for v in &a {
        match v {
            Value::List(l) => out.extend(l.iter().cloned()),
            Value::Missing | Value::Nil => return Err("Cannot concat type invalid as list".into()),
            other => return Err(format!("Cannot concat type {} as list", other.kind_name())),
        }
    }
    Ok(Value::from(out))
}

fn chunk(a: Vec<Value>) -> Result<Value, String> {
    let size = int_arg(&a[0]);
    let l = items(&a[1], "chunk")?;
    if size <= 0 {
        return Err("runtime error: integer divide by zero".into());
    }
    let size = size as usize;
    Ok(Value::from(
        l.chunks(size)
            .map(|c| Value::from(c.to_vec()))
            .collect::<Vec<_>>(),
    ))
}

/// Most elements `until`/`untilStep` may produce.
const MAX_RANGE: i64 = 1 << 20;

fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, String> {
    let mut v = Vec::new();
    let too_many = || format!("range of more than {MAX_RANGE} elements");
    if stop < start {
        if step >= 0 {
            return Ok(v);
        }
        if (start - stop) / -step > MAX_RANGE {
            return Err(too_many());
        }
        let mut i = start;
        while i > stop {
            v.push(i);
            i += step;
        }
        return Ok(v);
    }
    if step <= 0 {
        return Ok(v);
    }
    if (stop - start) / step > MAX_RANGE {
        return Err(too_many());
    }
    let mut i = start;
    while i < stop {
        v.push(i);
        i += step;
    }
    Ok(v)
}

fn int_list(v: Vec<i64>) -> Value {
    Value::from(v.into_iter().map(Value::Int).collect::<Vec<_>>())
}

fn seq(a: Vec<Value>) -> Result<Value, String> {
    let p: Vec<i64> = a.iter().map(int_arg).collect();
    let nums = match p.as_slice() {
        [end] => {
            let inc = if *end < 1 { -1 } else { 1 };
            until_step(1, end + inc, inc)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(*start, end + step, step)?
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if *step > 0 {
                    return Ok(Value::from(""));
                }
            }
            until_step(*start, end + inc, *step)?
        }
        _ => return Ok(Value::from("")),
    };
    Ok(Value::from(
        nums.iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(" "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Value {
        int_list(v.to_vec())
    }

    #[test]
    fn list_helpers() {
        let l = ints(&[1, 2, 3]);
        assert_eq!(rest(&l).unwrap().to_go_string(), "[2 3]");
        assert_eq!(initial(&l).unwrap().to_go_string(), "[1 2]");
        assert_eq!(reverse(&l).unwrap().to_go_string(), "[3 2 1]");
        assert_eq!(uniq(&ints(&[1, 1, 2])).unwrap().to_go_string(), "[1 2]");
        assert_eq!(
            without(vec![l.clone(), Value::Int(2)])
                .unwrap()
                .to_go_string(),
            "[1 3]"
        );
        assert!(has(vec![Value::Int(2), l.clone()]).unwrap().truth());
        assert_eq!(
            slice(vec![l.clone(), Value::Int(1)])
                .unwrap()
                .to_go_string(),
            "[2 3]"
        );
        assert_eq!(
            chunk(vec![Value::Int(2), l]).unwrap().to_go_string(),
            "[[1 2] [3]]"
        );
        assert!(
            push(&[Value::from("x"), Value::Int(1)], "push")
                .unwrap_err()
                .contains("Cannot push on type string")
        );
    }

    #[test]
    fn ranges_like_sprig() {
        assert_eq!(until_step(0, 5, 2).unwrap(), vec![0, 2, 4]);
        assert_eq!(until_step(5, 0, -2).unwrap(), vec![5, 3, 1]);
        assert_eq!(seq(vec![Value::Int(3)]).unwrap().as_str(), Some("1 2 3"));
        assert_eq!(
            seq(vec![Value::Int(5), Value::Int(3)]).unwrap().as_str(),
            Some("5 4 3")
        );
        assert_eq!(
            seq(vec![Value::Int(0), Value::Int(2), Value::Int(6)])
                .unwrap()
                .as_str(),
            Some("0 2 4 6")
        );
        assert!(until_step(0, i64::MAX, 1).is_err());
    }
}
