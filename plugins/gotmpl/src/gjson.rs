//! A stand-in for gjson's `Result`, which upstream api-syncagent passes to
//! mutation templates as `.Value` (templates call `.Value.String`,
//! `.Value.Int`, ...).

use std::collections::BTreeMap;

use crate::gofmt::format_float;
use crate::gojson;
use crate::value::{Object, Value};

/// The value found at a gjson path, with gjson `Result`'s fields
/// (`Type`, `Raw`, `Str`, `Num`, `Index`) and methods (`String`, `Int`,
/// `Uint`, `Float`, `Bool`, `Exists`, `Value`, `Array`, `Map`, `IsObject`,
/// `IsArray`, `IsBool`, `Get`). Printing it prints `String`, as in Go.
#[derive(Clone, Debug, Default)]
pub struct GjsonResult {
    value: Option<serde_json::Value>,
    raw: String,
}

impl GjsonResult {
    /// A result for `value`; `None` is gjson's non-existent result.
    pub fn new(value: Option<&serde_json::Value>) -> GjsonResult {
        match value {
            None => GjsonResult::default(),
            Some(v) => {
                let raw = gojson::encode(
                    &Value::from_json(v),
                    gojson::Encoder {
                        escape_html: true,
                        indent: None,
                    },
                )
                .unwrap_or_default();
                GjsonResult {
                    value: Some(v.clone()),
                    raw,
                }
            }
        }
    }

    /// A result from the raw JSON text found at the path (empty when the
    /// path did not match), keeping the text exactly for `Raw`/`String`.
    pub fn from_raw(raw: &str) -> GjsonResult {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return GjsonResult::default();
        }
        match serde_json::from_str::<serde_json::Value>(trimmed) {
            Ok(v) => GjsonResult {
                value: Some(v),
                raw: trimmed.to_string(),
            },
            Err(_) => GjsonResult {
                value: None,
                raw: trimmed.to_string(),
            },
        }
    }

    fn type_name(&self) -> &'static str {
        match &self.value {
            None | Some(serde_json::Value::Null) => "Null",
            Some(serde_json::Value::Bool(false)) => "False",
            Some(serde_json::Value::Bool(true)) => "True",
            Some(serde_json::Value::Number(_)) => "Number",
            Some(serde_json::Value::String(_)) => "String",
            Some(_) => "JSON",
        }
    }

    fn num(&self) -> f64 {
        match &self.value {
            Some(serde_json::Value::Number(n)) => n.as_f64().unwrap_or(0.0),
            _ => 0.0,
        }
    }

    fn str_field(&self) -> String {
        match &self.value {
            Some(serde_json::Value::String(s)) => s.clone(),
            _ => String::new(),
        }
    }

    /// gjson's `Result.String()`.
    pub fn string(&self) -> String {
        match &self.value {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::Bool(b)) => b.to_string(),
            Some(serde_json::Value::Number(_)) => {
                let body = self.raw.strip_prefix('-').unwrap_or(&self.raw);
                if !body.is_empty() && body.bytes().all(|c| c.is_ascii_digit()) {
                    self.raw.clone()
                } else {
                    format_float(self.num(), 'f', -1)
                }
            }
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(_) => self.raw.clone(),
        }
    }

    fn int(&self) -> i64 {
        match &self.value {
            Some(serde_json::Value::Bool(true)) => 1,
            Some(serde_json::Value::String(s)) => s.trim().parse::<i64>().unwrap_or(0),
            Some(serde_json::Value::Number(n)) => n
                .as_i64()
                .unwrap_or_else(|| self.raw.parse::<i64>().unwrap_or(self.num() as i64)),
            _ => 0,
        }
    }

    fn uint(&self) -> u64 {
        match &self.value {
            Some(serde_json::Value::Bool(true)) => 1,
            Some(serde_json::Value::String(s)) => s.trim().parse::<u64>().unwrap_or(0),
            Some(serde_json::Value::Number(n)) => n
                .as_u64()
                .unwrap_or_else(|| self.raw.parse::<u64>().unwrap_or(self.num() as u64)),
            _ => 0,
        }
    }

    fn float(&self) -> f64 {
        match &self.value {
            Some(serde_json::Value::Bool(true)) => 1.0,
            Some(serde_json::Value::String(s)) => s.parse::<f64>().unwrap_or(0.0),
            Some(serde_json::Value::Number(_)) => self.num(),
            _ => 0.0,
        }
    }

    fn boolean(&self) -> bool {
        match &self.value {
            Some(serde_json::Value::Bool(b)) => *b,
            Some(serde_json::Value::String(s)) => {
                matches!(s.as_str(), "1" | "t" | "T" | "TRUE" | "true" | "True")
            }
            Some(serde_json::Value::Number(_)) => self.num() != 0.0,
            _ => false,
        }
    }

    fn get(&self, path: &str) -> GjsonResult {
        let mut cur = self.value.clone();
        for part in split_path(path) {
            cur = match cur {
                Some(serde_json::Value::Object(m)) => m.get(&part).cloned(),
                Some(serde_json::Value::Array(a)) => {
                    if part == "#" {
                        Some(serde_json::Value::from(a.len()))
                    } else {
                        part.parse::<usize>().ok().and_then(|i| a.get(i).cloned())
                    }
                }
                _ => None,
            };
        }
        GjsonResult::new(cur.as_ref())
    }
}

/// Splits a gjson path on dots, honouring `\.` escapes.
fn split_path(path: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '.' => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    parts.push(cur);
    parts
}

impl Object for GjsonResult {
    fn type_name(&self) -> String {
        "gjson.Result".into()
    }

    fn has_method(&self, name: &str) -> bool {
        matches!(
            name,
            "String"
                | "Int"
                | "Uint"
                | "Float"
                | "Bool"
                | "Exists"
                | "Value"
                | "Array"
                | "Map"
                | "IsObject"
                | "IsArray"
                | "IsBool"
                | "Get"
        )
    }

    fn call_method(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let want = if name == "Get" { 1 } else { 0 };
        if args.len() != want {
            return Err(format!(
                "wrong number of args for {name}: want {want} got {}",
                args.len()
            ));
        }
        Ok(match name {
            "String" => Value::from(self.string()),
            "Int" => Value::Int64(self.int()),
            "Uint" => Value::Int64(self.uint() as i64),
            "Float" => Value::Float(self.float()),
            "Bool" => Value::Bool(self.boolean()),
            "Exists" => Value::Bool(self.value.is_some() || !self.raw.is_empty()),
            "Value" => match &self.value {
                None => Value::Nil,
                Some(v) => Value::from_json_floats(v),
            },
            "Array" => {
                let items: Vec<Value> = match &self.value {
                    None | Some(serde_json::Value::Null) => Vec::new(),
                    Some(serde_json::Value::Array(a)) => a
                        .iter()
                        .map(|e| Value::object(GjsonResult::new(Some(e))))
                        .collect(),
                    Some(_) => vec![Value::object(self.clone())],
                };
                Value::from(items)
            }
            "Map" => {
                let m: BTreeMap<String, Value> = match &self.value {
                    Some(serde_json::Value::Object(o)) => o
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::object(GjsonResult::new(Some(v)))))
                        .collect(),
                    _ => BTreeMap::new(),
                };
                Value::from(m)
            }
            "IsObject" => Value::Bool(matches!(self.value, Some(serde_json::Value::Object(_)))),
            "IsArray" => Value::Bool(matches!(self.value, Some(serde_json::Value::Array(_)))),
            "IsBool" => Value::Bool(matches!(self.value, Some(serde_json::Value::Bool(_)))),
            "Get" => {
                let path = args[0].as_str().ok_or_else(|| {
                    format!(
                        "wrong type for value; expected string; got {}",
                        args[0].type_name()
                    )
                })?;
                Value::object(self.get(path))
            }
            _ => return Err(format!("can't call method {name}")),
        })
    }

    fn field(&self, name: &str) -> Option<Value> {
        Some(match name {
            "Type" => Value::from(self.type_name()),
            "Raw" => Value::from(self.raw.as_str()),
            "Str" => Value::from(self.str_field()),
            "Num" => Value::Float(self.num()),
            "Index" => Value::Int(0),
            _ => return None,
        })
    }

    fn display(&self) -> String {
        self.string()
    }

    fn to_json(&self) -> Option<Value> {
        Some(Value::map([
            ("Type".to_string(), Value::from(self.type_name())),
            ("Raw".to_string(), Value::from(self.raw.as_str())),
            ("Str".to_string(), Value::from(self.str_field())),
            ("Num".to_string(), Value::Float(self.num())),
            ("Index".to_string(), Value::Int(0)),
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExecOptions, Template};
    use serde_json::json;

    fn run(src: &str, r: GjsonResult) -> String {
        let data = Value::map([("Value".to_string(), Value::object(r))]);
        Template::parse(src)
            .unwrap()
            .execute_value(
                data,
                &ExecOptions {
                    html_escape: true,
                    ..Default::default()
                },
            )
            .unwrap()
    }

    #[test]
    fn upstream_mutation_template_upper_value_string() {
        assert_eq!(
            run(
                "{{ upper .Value.String }}",
                GjsonResult::new(Some(&json!("ubuntu:latest")))
            ),
            "UBUNTU:LATEST"
        );
    }

    #[test]
    fn methods_and_fields_behave_like_gjson() {
        assert_eq!(
            run(
                "{{ .Value }}|{{ .Value.Int }}|{{ .Value.Type }}",
                GjsonResult::from_raw("42")
            ),
            "42|42|Number"
        );
        assert_eq!(
            run(
                "{{ .Value.Exists }}|{{ .Value.String }}",
                GjsonResult::new(None)
            ),
            "false|"
        );
        assert_eq!(
            run(
                "{{ .Value.Raw }}",
                GjsonResult::new(Some(&json!({"a": "<"})))
            ),
            "{&#34;a&#34;:&#34;\\u003c&#34;}"
        );
        assert_eq!(
            run(
                "{{ (.Value.Get \"a.1\").String }}",
                GjsonResult::new(Some(&json!({"a": [1, "x"]})))
            ),
            "x"
        );
        assert_eq!(
            run(
                "{{ range .Value.Array }}{{ . }},{{ end }}",
                GjsonResult::new(Some(&json!([1, "b"])))
            ),
            "1,b,"
        );
        assert_eq!(
            run("{{ .Value.Float }}", GjsonResult::from_raw("1.50")),
            "1.5"
        );
    }
}
