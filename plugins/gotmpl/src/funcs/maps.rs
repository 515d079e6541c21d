//! Sprig's dictionary functions. Maps are shared references, so `set`,
//! `unset` and `merge` change the map in place, as in Go.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{Entry, Ty, sig, str_arg, str_list, strval};
use crate::funcs::convert::empty;
use crate::value::{MapRef, Value};

pub(crate) const FUNCS: &[Entry] = &[
    ("dict", sig(&[], Some(Ty::Any)), dict),
    ("get", sig(&[Ty::Map, Ty::Str], None), |a| {
        Ok(map(&a[0])
            .borrow()
            .get(str_arg(&a[1]))
            .cloned()
            .unwrap_or_else(|| Value::from("")))
    }),
    ("set", sig(&[Ty::Map, Ty::Str, Ty::Any], None), |a| {
        map(&a[0])
            .borrow_mut()
            .insert(str_arg(&a[1]).to_string(), a[2].clone());
        Ok(a[0].clone())
    }),
    ("unset", sig(&[Ty::Map, Ty::Str], None), |a| {
        map(&a[0]).borrow_mut().remove(str_arg(&a[1]));
        Ok(a[0].clone())
    }),
    ("hasKey", sig(&[Ty::Map, Ty::Str], None), |a| {
        Ok(Value::Bool(
            map(&a[0]).borrow().contains_key(str_arg(&a[1])),
        ))
    }),
    ("pluck", sig(&[Ty::Str], Some(Ty::Map)), |a| {
        let key = str_arg(&a[0]);
        Ok(Value::from(
            a[1..]
                .iter()
                .filter_map(|d| map(d).borrow().get(key).cloned())
                .collect::<Vec<_>>(),
        ))
    }),
    ("keys", sig(&[], Some(Ty::Map)), |a| {
        Ok(str_list(
            a.iter()
                .flat_map(|d| map(d).borrow().keys().cloned().collect::<Vec<_>>())
                .collect(),
        ))
    }),
    ("values", sig(&[Ty::Map], None), |a| {
        Ok(Value::from(
            map(&a[0]).borrow().values().cloned().collect::<Vec<_>>(),
        ))
    }),
    ("pick", sig(&[Ty::Map], Some(Ty::Str)), |a| {
        let m = map(&a[0]);
        let m = m.borrow();
        Ok(Value::map(a[1..].iter().filter_map(|k| {
            m.get(str_arg(k))
                .map(|v| (str_arg(k).to_string(), v.clone()))
        })))
    }),
    ("omit", sig(&[Ty::Map], Some(Ty::Str)), |a| {
        let m = map(&a[0]);
        let m = m.borrow();
        let omit: Vec<&str> = a[1..].iter().map(str_arg).collect();
        Ok(Value::map(
            m.iter()
                .filter(|(k, _)| !omit.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone())),
        ))
    }),
    ("merge", sig(&[Ty::Map], Some(Ty::Map)), |a| merge(a, false)),
    ("mustMerge", sig(&[Ty::Map], Some(Ty::Map)), |a| {
        merge(a, false)
    }),
    ("mergeOverwrite", sig(&[Ty::Map], Some(Ty::Map)), |a| {
        merge(a, true)
    }),
    ("mustMergeOverwrite", sig(&[Ty::Map], Some(Ty::Map)), |a| {
        merge(a, true)
    }),
    ("dig", sig(&[], Some(Ty::Any)), dig),
];

fn map(v: &Value) -> MapRef {
    match v {
        Value::Map(m) => Rc::clone(m),
        // The executor only passes maps for Ty::Map parameters.
        _ => Rc::default(),
    }
}

fn dict(a: Vec<Value>) -> Result<Value, String> {
    let mut m = BTreeMap::new();
    for pair in a.chunks(2) {
        let key = strval(&pair[0]);
        m.insert(key, pair.get(1).cloned().unwrap_or_else(|| Value::from("")));
    }
    Ok(Value::from(m))
}

fn merge(a: Vec<Value>, overwrite: bool) -> Result<Value, String> {
    let dst = map(&a[0]);
    for src in &a[1..] {
        merge_into(&dst, &map(src), overwrite, 0)?;
    }
    Ok(a[0].clone())
}

/// mergo's map merge as sprig uses it: nested maps merge recursively;
/// other values fill keys that are missing or hold a zero value, or
/// replace them all with `overwrite`.
fn merge_into(dst: &MapRef, src: &MapRef, overwrite: bool, depth: usize) -> Result<(), String> {
    if depth > crate::MAX_NESTING {
        return Err("merge: maps nested too deeply (or cyclic)".into());
    }
    if Rc::ptr_eq(dst, src) {
        return Ok(());
    }
    let entries: Vec<(String, Value)> = src
        .borrow()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, s) in entries {
        let d = dst.borrow().get(&k).cloned();
        match (&s, &d) {
            (Value::Nil | Value::Missing, _) => {
                if overwrite {
                    dst.borrow_mut().insert(k, Value::Nil);
                }
            }
            (Value::Map(sm), Some(Value::Map(dm))) => {
                merge_into(dm, sm, overwrite, depth + 1)?;
                if dm.borrow().is_empty() {
                    dst.borrow_mut().insert(k, s.clone());
                }
            }
            _ => {
                let replace = match &d {
                    None => true,
                    Some(dv) => overwrite || empty(dv),
                };
                if replace {
                    dst.borrow_mut().insert(k, s);
                }
            }
        }
    }
    Ok(())
}

fn dig(a: Vec<Value>) -> Result<Value, String> {
    if a.len() < 3 {
        return Err("dig needs at least three arguments".into());
    }
    let n = a.len();
    let mut cur = match &a[n - 1] {
        Value::Map(m) => Rc::clone(m),
        other => {
            return Err(format!(
                "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                other.type_name()
            ));
        }
    };
    let def = a[n - 2].clone();
    let keys = &a[..n - 2];
    for (i, k) in keys.iter().enumerate() {
        let key = k.as_str().ok_or_else(|| {
            format!(
                "interface conversion: interface {{}} is {}, not string",
                k.type_name()
            )
        })?;
        let step = cur.borrow().get(key).cloned();
        let Some(step) = step else { return Ok(def) };
        if i == keys.len() - 1 {
            return Ok(step);
        }
        cur = match step {
            Value::Map(m) => m,
            other => {
                return Err(format!(
                    "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                    other.type_name()
                ));
            }
        };
    }
    Ok(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, Value)]) -> Value {
        Value::map(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())))
    }

    #[test]
    fn dict_and_set_share_the_map() {
        let d = dict(vec![Value::from("a"), Value::Int(1), Value::from("b")]).unwrap();
        assert_eq!(d.to_go_string(), "map[a:1 b:]");
        let (f, _) = crate::funcs::lookup("set", &[]).unwrap();
        f.call(vec![d.clone(), Value::from("c"), Value::Int(3)])
            .unwrap();
        assert_eq!(d.to_go_string(), "map[a:1 b: c:3]");
    }

    #[test]
    fn merge_fills_missing_and_empty_keys() {
        let dst = m(&[
            ("a", Value::Int(1)),
            ("e", Value::from("")),
            ("n", m(&[("x", Value::Int(1))])),
        ]);
        let src = m(&[
            ("a", Value::Int(2)),
            ("b", Value::Int(3)),
            ("e", Value::from("f")),
            ("n", m(&[("x", Value::Int(9)), ("y", Value::Int(2))])),
        ]);
        let out = merge(vec![dst.clone(), src.clone()], false).unwrap();
        assert_eq!(out.to_go_string(), "map[a:1 b:3 e:f n:map[x:1 y:2]]");
        let out = merge(vec![dst, src], true).unwrap();
        assert_eq!(out.to_go_string(), "map[a:2 b:3 e:f n:map[x:9 y:2]]");
    }

    #[test]
    fn dig_walks_nested_maps() {
        let d = m(&[("a", m(&[("b", Value::from("c"))]))]);
        assert_eq!(
            dig(vec![
                Value::from("a"),
                Value::from("b"),
                Value::from("def"),
                d.clone()
            ])
            .unwrap()
            .as_str(),
            Some("c")
        );
        assert_eq!(
            dig(vec![
                Value::from("a"),
                Value::from("z"),
                Value::from("def"),
                d
            ])
            .unwrap()
            .as_str(),
            Some("def")
        );
    }
}
