//! Go's `fmt` printing (`Sprint`, `Sprintln`, `Sprintf`) and `strconv`
//! number and string formatting, on template values.

use crate::value::Value;

/// `fmt.Sprint(args...)`: spaces go between operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut p = Printer::default();
    let mut prev_string = false;
    for (i, arg) in args.iter().enumerate() {
        let is_string = matches!(arg, Value::String(_));
        if i > 0 && !is_string && !prev_string {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
        prev_string = is_string;
    }
    p.buf
}

/// `fmt.Sprintln(args...)`: always spaces, plus a trailing newline.
pub fn sprintln(args: &[Value]) -> String {
    let mut p = Printer::default();
    for (i, arg) in args.iter().enumerate() {
        if i > 0 {
            p.buf.push(' ');
        }
        p.print_arg(arg, 'v');
    }
    p.buf.push('\n');
    p.buf
}

/// `fmt.Sprint(v)` for one operand.
pub fn sprint_one(v: &Value) -> String {
    let mut p = Printer::default();
    p.print_arg(v, 'v');
    p.buf
}

/// How a value prints when nested inside a list, map or struct.
pub fn sprint_nested(v: &Value) -> String {
    let mut p = Printer::default();
    p.print_value(v, 'v', 1);
    p.buf
}

/// `fmt.Sprintf(format, args...)`, including Go's in-band error notation
/// (`%!d(string=x)`, `%!s(MISSING)`, `%!(EXTRA ...)`).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut p = Printer::default();
    p.do_printf(format, args);
    p.buf
}

#[derive(Default, Clone, Copy)]
struct Flags {
    plus: bool,
    minus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    plus_v: bool,
    sharp_v: bool,
    wid: Option<usize>,
    prec: Option<usize>,
}

#[derive(Default)]
struct Printer {
    buf: String,
    f: Flags,
    /// Go's "reordered" flag: explicit argument indexes disable EXTRA checks.
    reordered: bool,
    good_arg_num: bool,
}

const TOO_LARGE: i64 = 1_000_000;

fn parse_num(s: &[u8], mut i: usize, end: usize) -> (Option<usize>, usize) {
    let start = i;
    let mut num: i64 = 0;
    while i < end && s[i].is_ascii_digit() {
        num = num * 10 + i64::from(s[i] - b'0');
        if num > TOO_LARGE {
            return (None, end);
        }
        i += 1;
    }
    if i == start {
        (None, i)
    } else {
        (Some(num as usize), i)
    }
}

impl Printer {
    fn do_printf(&mut self, format: &str, args: &[Value]) {
        let s = format.as_bytes();
        let end = s.len();
        let mut arg_num = 0usize;
        let mut i = 0usize;
        self.reordered = false;
        'outer: while i < end {
            self.good_arg_num = true;
            let last = i;
            while i < end && s[i] != b'%' {
                i += 1;
            }
            if i > last {
                self.buf.push_str(&format[last..i]);
            }
            if i >= end {
                break;
            }
            i += 1;
            self.f = Flags::default();
            while i < end {
                match s[i] {
                    b'#' => self.f.sharp = true,
                    b'0' => self.f.zero = !self.f.minus,
                    b'+' => self.f.plus = true,
                    b'-' => {
                        self.f.minus = true;
                        self.f.zero = false;
                    }
                    b' ' => self.f.space = true,
                    _ => break,
                }
                i += 1;
            }
            let mut after_index;
            (arg_num, i, after_index) = self.arg_number(arg_num, s, i, args.len());
            // Width.
            if i < end && s[i] == b'*' {
                i += 1;
                let (w, ok, n) = int_from_arg(args, arg_num);
                arg_num = n;
                if !ok {
                    self.buf.push_str("%!(BADWIDTH)");
                    self.f.wid = None;
                } else if w < 0 {
                    self.f.wid = Some(w.unsigned_abs() as usize);
                    self.f.minus = true;
                    self.f.zero = false;
                } else {
                    self.f.wid = Some(w as usize);
                }
                after_index = false;
            } else {
                let (w, ni) = parse_num(s, i, end);
                self.f.wid = w;
                i = ni;
                if after_index && w.is_some() {
                    self.good_arg_num = false;
                }
            }
            // Precision.
            if i + 1 < end && s[i] == b'.' {
                i += 1;
                if after_index {
                    self.good_arg_num = false;
                }
                (arg_num, i, after_index) = self.arg_number(arg_num, s, i, args.len());
                if i < end && s[i] == b'*' {
                    i += 1;
                    let (p, ok, n) = int_from_arg(args, arg_num);
                    arg_num = n;
                    if p < 0 {
                        self.f.prec = None;
                    } else {
                        self.f.prec = if ok { Some(p as usize) } else { None };
                    }
                    if !ok {
                        self.buf.push_str("%!(BADPREC)");
                    }
                    after_index = false;
                } else {
                    let (p, ni) = parse_num(s, i, end);
                    i = ni;
                    self.f.prec = Some(p.unwrap_or(0));
                }
            }
            if !after_index {
                (arg_num, i, _) = self.arg_number(arg_num, s, i, args.len());
            }
            if i >= end {
                self.buf.push_str("%!(NOVERB)");
                break 'outer;
            }
            let verb = format[i..].chars().next().unwrap_or('?');
            i += verb.len_utf8();
            if verb == '%' {
                self.buf.push('%');
            } else if !self.good_arg_num {
                self.buf.push_str(&format!("%!{verb}(BADINDEX)"));
            } else if arg_num >= args.len() {
                self.buf.push_str(&format!("%!{verb}(MISSING)"));
            } else {
                if verb == 'v' {
                    self.f.sharp_v = self.f.sharp;
                    self.f.sharp = false;
                    self.f.plus_v = self.f.plus;
                    self.f.plus = false;
                }
                self.print_arg(&args[arg_num], verb);
                arg_num += 1;
            }
        }
        if !self.reordered && arg_num < args.len() {
            self.f = Flags::default();
            self.buf.push_str("%!(EXTRA ");
            for (k, arg) in args[arg_num..].iter().enumerate() {
                if k > 0 {
                    self.buf.push_str(", ");
                }
                if arg.is_nil() {
                    self.buf.push_str("<nil>");
                } else {
                    self.buf.push_str(&arg.type_name());
                    self.buf.push('=');
                    self.print_arg(arg, 'v');
                }
            }
            self.buf.push(')');
        }
    }

    fn arg_number(
        &mut self,
        arg_num: usize,
        s: &[u8],
        i: usize,
        num_args: usize,
    ) -> (usize, usize, bool) {
        if i >= s.len() || s[i] != b'[' {
            return (arg_num, i, false);
        }
        self.reordered = true;
        let rest = &s[i..];
        if rest.len() < 3 {
            self.good_arg_num = false;
            return (arg_num, i + 1, false);
        }
        for j in 1..rest.len() {
            if rest[j] == b']' {
                let (n, ni) = parse_num(rest, 1, j);
                match n {
                    Some(n) if ni == j && n >= 1 && n - 1 < num_args => {
                        return (n - 1, i + j + 1, true);
                    }
                    Some(_) if ni == j => {
                        self.good_arg_num = false;
                        return (arg_num, i + j + 1, true);
                    }
                    _ => {
                        self.good_arg_num = false;
                        return (arg_num, i + j + 1, false);
                    }
                }
            }
        }
        self.good_arg_num = false;
        (arg_num, i + 1, false)
    }

    fn print_arg(&mut self, arg: &Value, verb: char) {
        if arg.is_nil() {
            match verb {
                'T' | 'v' => self.pad_string("<nil>"),
                _ => self.bad_verb(verb, arg),
            }
            return;
        }
        if verb == 'T' {
            let t = arg.type_name();
            self.fmt_s(&t);
            return;
        }
        self.print_value(arg, verb, 0);
    }

    fn print_value(&mut self, v: &Value, verb: char, depth: usize) {
        if depth > crate::MAX_NESTING {
            self.buf.push_str("...");
            return;
        }
        match v {
            Value::Missing | Value::Nil => {
                if depth == 0 {
                    self.print_arg(v, verb);
                } else if self.f.sharp_v {
                    self.buf.push_str("interface {}(nil)");
                } else {
                    self.buf.push_str("<nil>");
                }
            }
            Value::Bool(b) => match verb {
                't' | 'v' => self.pad_string(if *b { "true" } else { "false" }),
                _ => self.bad_verb(verb, v),
            },
            Value::Int(i) | Value::Int64(i) => self.fmt_integer(*i as u64, true, verb, v),
            Value::Uint8(i) => self.fmt_integer(u64::from(*i), false, verb, v),
            Value::Float(x) => match verb {
                'v' => self.fmt_float(*x, 'g', None),
                'b' | 'g' | 'G' | 'x' | 'X' => self.fmt_float(*x, verb, None),
                'f' | 'e' | 'E' | 'F' => self.fmt_float(*x, verb, Some(6)),
                _ => self.bad_verb(verb, v),
            },
            Value::String(s) => self.fmt_string(s, verb, v),
            Value::List(l) => {
                if self.f.sharp_v {
                    self.buf.push_str("[]interface {}{");
                    for (i, e) in l.iter().enumerate() {
                        if i > 0 {
                            self.buf.push_str(", ");
                        }
                        self.print_value(e, verb, depth + 1);
                    }
                    self.buf.push('}');
                } else {
                    self.buf.push('[');
                    for (i, e) in l.iter().enumerate() {
                        if i > 0 {
                            self.buf.push(' ');
                        }
                        self.print_value(e, verb, depth + 1);
                    }
                    self.buf.push(']');
                }
            }
            Value::Map(m) => {
                let m = m.borrow();
                if self.f.sharp_v {
                    self.buf.push_str("map[string]interface {}{");
                } else {
                    self.buf.push_str("map[");
                }
                for (i, (k, e)) in m.iter().enumerate() {
                    if i > 0 {
                        self.buf.push_str(if self.f.sharp_v { ", " } else { " " });
                    }
                    self.fmt_string(k, verb, &Value::from(k.as_str()));
                    self.buf.push(':');
                    self.print_value(e, verb, depth + 1);
                }
                self.buf.push(if self.f.sharp_v { '}' } else { ']' });
            }
            Value::Object(o) => {
                let s = o.display();
                match verb {
                    'v' | 's' | 'x' | 'X' | 'q' => self.fmt_string(&s, verb, v),
                    _ => self.bad_verb(verb, v),
                }
            }
        }
    }

    fn bad_verb(&mut self, verb: char, v: &Value) {
        self.buf.push_str("%!");
        self.buf.push(verb);
        self.buf.push('(');
        if v.is_nil() {
            self.buf.push_str("<nil>");
        } else {
            self.buf.push_str(&v.type_name());
            self.buf.push('=');
            let saved = (self.f.sharp_v, self.f.plus_v);
            self.print_value(v, 'v', 1);
            (self.f.sharp_v, self.f.plus_v) = saved;
        }
        self.buf.push(')');
    }

    fn fmt_string(&mut self, s: &str, verb: char, v: &Value) {
        match verb {
            'v' => {
                if self.f.sharp_v {
                    self.fmt_q(s)
                } else {
                    self.fmt_s(s)
                }
            }
            's' => self.fmt_s(s),
            'x' => self.fmt_sx(s, false),
            'X' => self.fmt_sx(s, true),
            'q' => self.fmt_q(s),
            _ => self.bad_verb(verb, v),
        }
    }

    fn truncate<'a>(&self, s: &'a str) -> &'a str {
        if let Some(p) = self.f.prec
            && let Some((idx, _)) = s.char_indices().nth(p)
        {
            return &s[..idx];
        }
        s
    }

    fn fmt_s(&mut self, s: &str) {
        let s = self.truncate(s).to_string();
        self.pad_string(&s);
    }

    fn fmt_sx(&mut self, s: &str, upper: bool) {
        let digits: &[u8] = if upper {
            b"0123456789ABCDEF"
        } else {
            b"0123456789abcdef"
        };
        let bytes = s.as_bytes();
        let n = match self.f.prec {
            Some(p) if p < bytes.len() => p,
            _ => bytes.len(),
        };
        let mut out = String::new();
        for (i, b) in bytes[..n].iter().enumerate() {
            if self.f.space && i > 0 {
                out.push(' ');
            }
            if self.f.sharp && (self.f.space || i == 0) {
                out.push('0');
                out.push(if upper { 'X' } else { 'x' });
            }
            out.push(digits[(b >> 4) as usize] as char);
            out.push(digits[(b & 15) as usize] as char);
        }
        self.pad_string(&out);
    }

    fn fmt_q(&mut self, s: &str) {
        let s = self.truncate(s);
        let q = if self.f.sharp && can_backquote(s) {
            format!("`{s}`")
        } else {
            quote_with(s, '"', self.f.plus)
        };
        self.pad_string(&q);
    }

    fn padding(&self, len: usize) -> usize {
        self.f.wid.map(|w| w.saturating_sub(len)).unwrap_or(0)
    }

    fn write_padding(&mut self, n: usize) {
        let c = if self.f.zero && !self.f.minus {
            '0'
        } else {
            ' '
        };
        for _ in 0..n {
            self.buf.push(c);
        }
    }

    fn pad_string(&mut self, s: &str) {
        let n = self.padding(s.chars().count());
        if self.f.minus {
            self.buf.push_str(s);
            self.write_padding(n);
        } else {
            self.write_padding(n);
            self.buf.push_str(s);
        }
    }

    fn fmt_integer(&mut self, u: u64, signed: bool, verb: char, v: &Value) {
        match verb {
            'v' | 'd' => self.fmt_int_base(u, 10, signed, verb, false),
            'b' => self.fmt_int_base(u, 2, signed, verb, false),
            'o' | 'O' => self.fmt_int_base(u, 8, signed, verb, false),
            'x' => self.fmt_int_base(u, 16, signed, verb, false),
            'X' => self.fmt_int_base(u, 16, signed, verb, true),
            'c' => {
                let c = char::from_u32(u as u32)
                    .filter(|_| u <= 0x10FFFF)
                    .unwrap_or('\u{FFFD}');
                let s = self.truncate_char(c);
                self.pad_string(&s);
            }
            'q' => {
                let c = char::from_u32(u as u32)
                    .filter(|_| u <= 0x10FFFF)
                    .unwrap_or('\u{FFFD}');
                let q = quote_with(&c.to_string(), '\'', self.f.plus);
                self.pad_string(&q);
            }
            'U' => {
                let mut s = format!("U+{u:04X}");
                if self.f.sharp
                    && let Some(c) = char::from_u32(u as u32).filter(|c| is_print(*c))
                {
                    s.push_str(&format!(" '{c}'"));
                }
                let old = self.f.zero;
                self.f.zero = false;
                self.pad_string(&s);
                self.f.zero = old;
            }
            _ => self.bad_verb(verb, v),
        }
    }

    fn truncate_char(&self, c: char) -> String {
        c.to_string()
    }

    fn fmt_int_base(&mut self, u: u64, base: u32, signed: bool, verb: char, upper: bool) {
        let negative = signed && (u as i64) < 0;
        let mag = if negative {
            (u as i64).unsigned_abs()
        } else {
            u
        };
        let mut prec = 0usize;
        if let Some(p) = self.f.prec {
            prec = p;
            if p == 0 && mag == 0 {
                let old = self.f.zero;
                self.f.zero = false;
                let n = self.f.wid.unwrap_or(0);
                self.write_padding(n);
                self.f.zero = old;
                return;
            }
        } else if self.f.zero
            && !self.f.minus
            && let Some(w) = self.f.wid
        {
            prec = w;
            if negative || self.f.plus || self.f.space {
                prec = prec.saturating_sub(1);
            }
        }
        let mut digits = match base {
            2 => format!("{mag:b}"),
            8 => format!("{mag:o}"),
            16 if upper => format!("{mag:X}"),
            16 => format!("{mag:x}"),
            _ => mag.to_string(),
        };
        while digits.len() < prec {
            digits.insert(0, '0');
        }
        if self.f.sharp {
            match base {
                2 => digits.insert_str(0, "0b"),
                8 if !digits.starts_with('0') => digits.insert(0, '0'),
                16 => digits.insert_str(0, if upper { "0X" } else { "0x" }),
                _ => {}
            }
        }
        if verb == 'O' {
            digits.insert_str(0, "0o");
        }
        if negative {
            digits.insert(0, '-');
        } else if self.f.plus {
            digits.insert(0, '+');
        } else if self.f.space {
            digits.insert(0, ' ');
        }
        let old = self.f.zero;
        self.f.zero = false;
        self.pad_string(&digits);
        self.f.zero = old;
    }

    fn fmt_float(&mut self, x: f64, verb: char, default_prec: Option<usize>) {
        let prec = self.f.prec.or(default_prec).map(|p| p as i32).unwrap_or(-1);
        let mut num = match verb {
            'F' => format_float(x, 'f', prec),
            'x' | 'X' => format_hex_float(x, prec, verb == 'X'),
            'b' => format_float(x, 'g', prec),
            c => format_float(x, c, prec),
        };
        if !(num.starts_with('-') || num.starts_with('+')) {
            num.insert(0, '+');
        }
        if self.f.space && num.starts_with('+') && !self.f.plus {
            num.replace_range(0..1, " ");
        }
        if num[1..].starts_with('I') || num[1..].starts_with('N') {
            let old = self.f.zero;
            self.f.zero = false;
            if num[1..].starts_with('N') && !self.f.space && !self.f.plus {
                num.remove(0);
            }
            self.pad_string(&num);
            self.f.zero = old;
            return;
        }
        if self.f.sharp
            && !num[1..].contains('.')
            && !num[1..].contains('e')
            && !num[1..].contains('E')
        {
            num.push('.');
        }
        if self.f.plus || !num.starts_with('+') {
            if self.f.zero
                && !self.f.minus
                && let Some(w) = self.f.wid
                && w > num.len()
            {
                let (sign, rest) = num.split_at(1);
                let sign = sign.to_string();
                let rest = rest.to_string();
                self.buf.push_str(&sign);
                self.write_padding(w - num.len());
                self.buf.push_str(&rest);
                return;
            }
            self.pad_string(&num);
            return;
        }
        let rest = num[1..].to_string();
        self.pad_string(&rest);
    }
}

fn int_from_arg(args: &[Value], arg_num: usize) -> (i64, bool, usize) {
    if arg_num < args.len() {
        let (n, ok) = match args[arg_num].as_int() {
            Some(n) if (-TOO_LARGE..=TOO_LARGE).contains(&n) => (n, true),
            _ => (0, false),
        };
        (n, ok, arg_num + 1)
    } else {
        (0, false, arg_num)
    }
}

/// Decimal digits of a float and the position of the decimal point
/// (`0.0123` is digits "123", dp -1), like strconv's decimalSlice.
struct Digits {
    d: Vec<u8>,
    dp: i32,
}

fn parse_sci(s: &str) -> Digits {
    // Rust prints `{:e}` as "1.2345e-7" or "1e21".
    let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let mut d: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).collect();
    while d.len() > 1 && d.last() == Some(&b'0') {
        d.pop();
    }
    if d == b"0" {
        return Digits {
            d: Vec::new(),
            dp: 0,
        };
    }
    Digits { d, dp: exp + 1 }
}

fn shortest_digits(x: f64) -> Digits {
    parse_sci(&format!("{:e}", x.abs()))
}

fn sig_digits(x: f64, n: usize) -> Digits {
    let n = n.max(1);
    parse_sci(&format!("{:.*e}", n - 1, x.abs()))
}

fn fmt_e(neg: bool, d: &Digits, prec: i32, e: char) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push(d.d.first().map(|c| *c as char).unwrap_or('0'));
    if prec > 0 {
        out.push('.');
        let prec = prec as usize;
        for i in 1..=prec {
            out.push(d.d.get(i).map(|c| *c as char).unwrap_or('0'));
        }
    }
    out.push(e);
    let mut exp = if d.d.is_empty() { 0 } else { d.dp - 1 };
    if exp < 0 {
        out.push('-');
        exp = -exp;
    } else {
        out.push('+');
    }
    if exp < 10 {
        out.push('0');
    }
    out.push_str(&exp.to_string());
    out
}

fn fmt_f(neg: bool, d: &Digits, prec: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if d.dp > 0 {
        let dp = d.dp as usize;
        for i in 0..dp {
            out.push(d.d.get(i).map(|c| *c as char).unwrap_or('0'));
        }
    } else {
        out.push('0');
    }
    if prec > 0 {
        out.push('.');
        for i in 1..=prec {
            let j = d.dp + i - 1;
            let c = if j >= 0 {
                d.d.get(j as usize).map(|c| *c as char).unwrap_or('0')
            } else {
                '0'
            };
            out.push(c);
        }
    }
    out
}

/// `strconv.FormatFloat(x, fmt, prec, 64)` for fmt in e, E, f, g, G;
/// prec -1 means the shortest representation that round-trips.
pub fn format_float(x: f64, fmt: char, prec: i32) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let neg = x.is_sign_negative();
    match fmt {
        'e' | 'E' => {
            if prec < 0 {
                let d = shortest_digits(x);
                let p = d.d.len() as i32 - 1;
                fmt_e(neg, &d, p.max(0), fmt)
            } else {
                let d = sig_digits(x, prec as usize + 1);
                fmt_e(neg, &d, prec, fmt)
            }
        }
        'f' => {
            if prec < 0 {
                let d = shortest_digits(x);
                let p = (d.d.len() as i32 - d.dp).max(0);
                fmt_f(neg, &d, p)
            } else {
                let s = format!("{:.*}", prec as usize, x.abs());
                if neg { format!("-{s}") } else { s }
            }
        }
        _ => {
            let upper = fmt == 'G';
            let e = if upper { 'E' } else { 'e' };
            let shortest = prec < 0;
            let (d, mut prec) = if shortest {
                let d = shortest_digits(x);
                let n = d.d.len() as i32;
                (d, n)
            } else {
                let p = if prec == 0 { 1 } else { prec };
                (sig_digits(x, p as usize), p)
            };
            let nd = d.d.len() as i32;
            let mut eprec = prec;
            if eprec > nd && nd >= d.dp {
                eprec = nd;
            }
            if shortest {
                eprec = 6;
            }
            let exp = d.dp - 1;
            if nd == 0 {
                // Zero: Go prints "0" (no exponent).
                return fmt_f(neg, &d, 0);
            }
            if exp < -4 || exp >= eprec {
                if prec > nd {
                    prec = nd;
                }
                return fmt_e(neg, &d, prec - 1, e);
            }
            if prec > d.dp {
                prec = nd;
            }
            fmt_f(neg, &d, (prec - d.dp).max(0))
        }
    }
}

/// `strconv.FormatFloat(x, 'x', prec, 64)`: hexadecimal mantissa and
/// binary exponent (`0x1.8p+00`).
pub fn format_hex_float(x: f64, prec: i32, upper: bool) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let neg = x.is_sign_negative();
    let bits = x.abs().to_bits();
    let mut exp = ((bits >> 52) & 0x7ff) as i32;
    let mut mant = bits & ((1u64 << 52) - 1);
    if exp == 0 && mant == 0 {
        exp = 0;
    } else if exp == 0 {
        // Subnormal: normalise so the leading digit is 1.
        exp = -1022;
        while mant & (1u64 << 52) == 0 {
            mant <<= 1;
            exp -= 1;
        }
        mant &= (1u64 << 52) - 1;
    } else {
        exp -= 1023;
    }
    let zero = x == 0.0;
    let mut digits = format!("{mant:013x}");
    let mut lead = if zero { 0u64 } else { 1 };
    if prec >= 0 {
        let p = prec as usize;
        if p < 13 {
            // Round half to even on the dropped bits.
            let shift = 4 * (13 - p) as u32;
            let full = (lead << 52) | mant;
            let rem = full & ((1u64 << shift) - 1);
            let half = 1u64 << (shift - 1);
            let mut kept = full >> shift;
            if rem > half || (rem == half && kept & 1 == 1) {
                kept += 1;
            }
            let width = 4 * p as u32;
            if kept >> width >= 2 {
                kept >>= 1;
                exp += 1;
            }
            lead = kept >> width;
            let frac = kept & ((1u64 << width) - 1);
            digits = if p == 0 {
                String::new()
            } else {
                format!("{frac:0w$x}", w = p)
            };
        } else {
            digits.push_str(&"0".repeat(p - 13));
        }
    } else {
        digits = digits.trim_end_matches('0').to_string();
    }
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    out.push_str("0x");
    out.push_str(&lead.to_string());
    if !digits.is_empty() {
        out.push('.');
        out.push_str(&digits);
    }
    out.push('p');
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.abs();
    if e < 10 {
        out.push('0');
    }
    out.push_str(&e.to_string());
    if upper { out.to_uppercase() } else { out }
}

/// Go's `unicode.IsPrint`, approximated without Unicode tables: controls,
/// separators other than ASCII space, format characters and private use
/// are not printable.
pub fn is_print(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    if c.is_control() {
        return false;
    }
    !matches!(u,
        0x00A0 | 0x00AD | 0x061C | 0x1680 | 0x180E | 0x2000..=0x200F | 0x2028..=0x202F | 0x205F..=0x206F |
        0x3000 | 0xD800..=0xDFFF | 0xE000..=0xF8FF | 0xFEFF | 0xFFF9..=0xFFFB | 0xFFFE | 0xFFFF |
        0xF0000..=0x10FFFF)
}

/// `strconv.Quote` (or `QuoteASCII` when `ascii`), with `quote` as delimiter.
pub fn quote_with(s: &str, quote: char, ascii: bool) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        if c == quote || c == '\\' {
            out.push('\\');
            out.push(c);
            continue;
        }
        if ascii {
            if (c as u32) < 0x80 && is_print(c) {
                out.push(c);
                continue;
            }
        } else if is_print(c) {
            out.push(c);
            continue;
        }
        match c {
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push(quote);
    out
}

/// `strconv.CanBackquote`.
fn can_backquote(s: &str) -> bool {
    s.chars()
        .all(|c| c != '`' && c != '\u{FEFF}' && (c == '\t' || !(c < ' ' || c == '\x7f')))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    #[test]
    fn floats_print_like_go() {
        assert_eq!(format_float(1e6, 'g', -1), "1e+06");
        assert_eq!(format_float(123456.0, 'g', -1), "123456");
        assert_eq!(format_float(1.5, 'g', -1), "1.5");
        assert_eq!(format_float(0.0001, 'g', -1), "0.0001");
        assert_eq!(format_float(0.00001, 'g', -1), "1e-05");
        assert_eq!(format_float(3.0, 'f', 2), "3.00");
        assert_eq!(format_float(1234.5678, 'e', 3), "1.235e+03");
        assert_eq!(format_float(1234.0, 'g', 3), "1.23e+03");
        assert_eq!(format_float(1.0, 'g', 3), "1");
        assert_eq!(format_float(0.0, 'g', -1), "0");
        assert_eq!(format_float(1e21, 'f', -1), "1000000000000000000000");
    }

    #[test]
    fn printf_verbs_match_go() {
        assert_eq!(sprintf("%s-%d", &[s("a"), Value::Int(3)]), "a-3");
        assert_eq!(
            sprintf(
                "%5.2f|%-4d|%04d",
                &[Value::Float(4.56789), Value::Int(7), Value::Int(-7)]
            ),
            " 4.57|7   |-007"
        );
        assert_eq!(
            sprintf(
                "%q %v %t",
                &[s("a\"b"), Value::Bool(true), Value::Bool(false)]
            ),
            "\"a\\\"b\" true false"
        );
        assert_eq!(
            sprintf(
                "%x %X %o %b",
                &[s("hi"), Value::Int(255), Value::Int(8), Value::Int(5)]
            ),
            "6869 FF 10 101"
        );
        assert_eq!(sprintf("%d", &[s("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%d %d", &[Value::Int(1)]), "1 %!d(MISSING)");
        assert_eq!(
            sprintf("%d", &[Value::Int(1), s("x")]),
            "1%!(EXTRA string=x)"
        );
        assert_eq!(sprintf("%[2]s %[1]s", &[s("a"), s("b")]), "b a");
        assert_eq!(
            sprintf("%T %T", &[Value::Int64(1), Value::from(vec![])]),
            "int64 []interface {}"
        );
        assert_eq!(sprintf("%v", &[Value::Nil]), "<nil>");
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(
            sprintf("%c|%U", &[Value::Int(65), Value::Int(0x1F600)]),
            "A|U+1F600"
        );
        assert_eq!(sprintf("%*d", &[Value::Int(4), Value::Int(1)]), "   1");
    }

    #[test]
    fn sprint_spacing_follows_go() {
        assert_eq!(sprint(&[s("a"), s("b")]), "ab");
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2)]), "1 2");
        assert_eq!(
            sprint(&[s("a"), Value::Int(1), Value::Int(2), s("b")]),
            "a1 2b"
        );
        assert_eq!(sprintln(&[s("a"), Value::Int(1)]), "a 1\n");
    }

    #[test]
    fn composite_values_print_like_go() {
        let list = Value::from(vec![s("a"), Value::Int(1), Value::Nil]);
        assert_eq!(sprint_one(&list), "[a 1 <nil>]");
        let m = Value::map([("b".to_string(), Value::Int(2)), ("a".to_string(), list)]);
        assert_eq!(sprint_one(&m), "map[a:[a 1 <nil>] b:2]");
        assert_eq!(
            sprintf("%#v", &[Value::from(vec![s("a")])]),
            "[]interface {}{\"a\"}"
        );
    }

    #[test]
    fn quote_escapes_like_strconv() {
        assert_eq!(quote_with("a\nb\t\u{1}é", '"', false), "\"a\\nb\\t\\x01é\"");
        assert_eq!(quote_with("é", '"', true), "\"\\u00e9\"");
    }
}
