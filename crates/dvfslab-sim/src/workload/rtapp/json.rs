//! A relaxed JSON reader for rt-app files.
//!
//! rt-app descriptions are JSON as `workgen` and json-c's lenient tokener accept it, which a
//! standard parser rejects or silently changes:
//!
//! - object keys keep their order **and their repetitions**: a phase lists
//!   `"run": 10, "sleep": 5, "run": 10` and means both runs (workgen renames the second to
//!   `run1`; we keep the entries instead);
//! - `/* ... */` and `// ...` comments, and trailing commas before `}` or `]`;
//! - a key with no value, `"suspend",` (the video examples): the entry's value is
//!   [`Value::Missing`], for the grammar to interpret or reject.
//!
//! Each value remembers its line so that grammar errors can say where they are.

use std::fmt;

/// A JSON value with the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub line: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Node>),
    /// Entries in file order, repeated keys included.
    Object(Vec<(String, Node)>),
    /// An object key written without `: value`.
    Missing,
}

impl Value {
    /// How the value is described in "expected X, got Y" messages.
    pub fn kind(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            // `{:?}` keeps the decimal point: 1e8 reads "100000000.0", not an integer.
            Value::Float(f) => format!("{f:?}"),
            Value::Str(s) => format!("\"{s}\""),
            Value::Array(_) => "an array".into(),
            Value::Object(_) => "an object".into(),
            Value::Missing => "no value".into(),
        }
    }
}

/// Where the text stops being (relaxed) JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 128;

/// Parse a whole document: one value, then only whitespace and comments.
pub fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut p = Parser { s: text.as_bytes(), text, pos: 0, line: 1, line_start: 0 };
    let node = p.value(0)?;
    p.skip_blank()?;
    if p.pos < p.s.len() {
        return Err(p.error("unexpected text after the end of the document"));
    }
    Ok(node)
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    line: u32,
    line_start: usize,
}

/// A place in the text, kept to report an error that may come later (an unterminated string
/// or comment is reported where it opens).
#[derive(Clone, Copy)]
struct Place {
    pos: usize,
    line: u32,
    line_start: usize,
}

impl Parser<'_> {
    fn place(&self) -> Place {
        Place { pos: self.pos, line: self.line, line_start: self.line_start }
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        self.error_at(self.place(), message)
    }

    /// The column is counted in characters from the start of the line, only once an error is
    /// certain: counting at every string would make a one-line document quadratic.
    fn error_at(&self, at: Place, message: impl Into<String>) -> SyntaxError {
        // Characters are counted by their first bytes (any byte but a UTF-8 continuation byte),
        // so that a place inside a multi-byte character (after a bad escape) counts that character.
        let before = &self.s[at.line_start..at.pos.min(self.s.len())];
        let column = before.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u32 + 1;
        SyntaxError { line: at.line, column, message: message.into() }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn bump(&mut self) {
        if self.s[self.pos] == b'\n' {
            self.line += 1;
            self.line_start = self.pos + 1;
        }
        self.pos += 1;
    }

    /// Skip whitespace and comments.
    fn skip_blank(&mut self) -> Result<(), SyntaxError> {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\r' | b'\n' => self.bump(),
                b'/' if self.s.get(self.pos + 1) == Some(&b'/') => {
                    while self.peek().is_some_and(|c| c != b'\n') {
                        self.bump();
                    }
                }
                b'/' if self.s.get(self.pos + 1) == Some(&b'*') => {
                    let open = self.place();
                    self.bump();
                    self.bump();
                    loop {
                        match self.peek() {
                            None => return Err(self.error_at(open, "unterminated /* comment")),
                            Some(b'*') if self.s.get(self.pos + 1) == Some(&b'/') => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            Some(_) => self.bump(),
                        }
                    }
                }
                _ => break,
            }
        }
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!("nested deeper than {MAX_DEPTH} levels")));
        }
        self.skip_blank()?;
        let line = self.line;
        let value = match self.peek() {
            None => return Err(self.error("unexpected end of the document, expected a value")),
            Some(b'{') => self.object(depth)?,
            Some(b'[') => self.array(depth)?,
            Some(b'"') => Value::Str(self.string()?),
            Some(b'-' | b'0'..=b'9') => self.number()?,
            Some(c) if c.is_ascii_alphabetic() => self.word()?,
            Some(_) => return Err(self.error(format!("unexpected '{}', expected a value", self.char_here()))),
        };
        Ok(Node { value, line })
    }

    fn char_here(&self) -> char {
        self.text[self.pos..].chars().next().unwrap_or(' ')
    }

    fn object(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.bump(); // {
        let mut entries = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                Some(b'}') => {
                    self.bump();
                    return Ok(Value::Object(entries));
                }
                Some(b'"') => {}
                None => return Err(self.error("unexpected end of the document inside an object")),
                Some(_) => return Err(self.error(format!("expected a \"key\" or '}}', got '{}'", self.char_here()))),
            }
            let line = self.line;
            let key = self.string()?;
            self.skip_blank()?;
            let node = match self.peek() {
                Some(b':') => {
                    self.bump();
                    self.value(depth + 1)?
                }
                // `"suspend",`: a key on its own.
                Some(b',' | b'}') => Node { value: Value::Missing, line },
                _ => return Err(self.error(format!("expected ':' after the key \"{key}\""))),
            };
            entries.push((key, node));
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b'}') => {}
                None => return Err(self.error("unexpected end of the document inside an object")),
                Some(_) => return Err(self.error(format!("expected ',' or '}}', got '{}'", self.char_here()))),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.bump(); // [
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.peek() == Some(b']') {
                self.bump();
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => self.bump(),
                Some(b']') => {}
                None => return Err(self.error("unexpected end of the document inside an array")),
                Some(_) => return Err(self.error(format!("expected ',' or ']', got '{}'", self.char_here()))),
            }
        }
    }

    fn string(&mut self) -> Result<String, SyntaxError> {
        let open = self.place();
        let unterminated = |p: &Self| p.error_at(open, "unterminated string");
        self.bump(); // "
        let mut out = String::new();
        loop {
            let start = self.pos;
            while self.peek().is_some_and(|c| c != b'"' && c != b'\\' && c != b'\n') {
                self.pos += 1;
            }
            out.push_str(&self.text[start..self.pos]);
            match self.peek() {
                None | Some(b'\n') => return Err(unterminated(self)),
                Some(b'"') => {
                    self.bump();
                    return Ok(out);
                }
                Some(_) => {
                    self.bump(); // backslash
                    let Some(c) = self.peek() else { return Err(unterminated(self)) };
                    let escaped = match c {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            self.bump();
                            out.push(self.unicode_escape()?);
                            continue;
                        }
                        // Reported at the escaped character, whole even when it is not ASCII.
                        _ => return Err(self.error(format!("unknown escape '\\{}'", self.char_here()))),
                    };
                    self.bump();
                    out.push(escaped);
                }
            }
        }
    }

    /// The four hex digits after `\u` (a surrogate pair takes a second `\uXXXX`).
    fn unicode_escape(&mut self) -> Result<char, SyntaxError> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) && self.s.get(self.pos..self.pos + 2) == Some(b"\\u") {
            self.bump();
            self.bump();
            let lo = self.hex4()?;
            let code = 0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00) & 0x3FF);
            return char::from_u32(code).ok_or_else(|| self.error("invalid \\u surrogate pair"));
        }
        char::from_u32(hi).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn hex4(&mut self) -> Result<u32, SyntaxError> {
        let digits = self.s.get(self.pos..self.pos + 4).and_then(|d| std::str::from_utf8(d).ok());
        let v = digits.and_then(|d| u32::from_str_radix(d, 16).ok()).ok_or_else(|| self.error("bad \\u escape"))?;
        for _ in 0..4 {
            self.bump();
        }
        Ok(v)
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        let mut float = false;
        while let Some(c) = self.peek() {
            match c {
                b'0'..=b'9' | b'-' | b'+' => {}
                b'.' | b'e' | b'E' => float = true,
                _ => break,
            }
            self.pos += 1;
        }
        let text = &self.text[start..self.pos];
        let bad = || format!("'{text}' is not a number");
        if !float {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::Int(i));
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() && !text.starts_with('+') => Ok(Value::Float(f)),
            _ => {
                self.pos = start;
                Err(self.error(bad()))
            }
        }
    }

    fn word(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') {
            self.pos += 1;
        }
        match &self.text[start..self.pos] {
            "true" => Ok(Value::Bool(true)),
            "false" => Ok(Value::Bool(false)),
            "null" => Ok(Value::Null),
            w => {
                let w = w.to_string();
                self.pos = start;
                Err(self.error(format!("unexpected word '{w}' (strings need \"quotes\")")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(n: &Node) -> &[(String, Node)] {
        match &n.value {
            Value::Object(e) => e,
            v => panic!("not an object: {v:?}"),
        }
    }

    #[test]
    fn keeps_key_order_and_repeated_keys() {
        let n = parse(r#"{"run": 10, "sleep": 5, "run": 20}"#).unwrap();
        let keys: Vec<_> = obj(&n).iter().map(|(k, v)| (k.as_str(), v.value.clone())).collect();
        assert_eq!(keys, vec![("run", Value::Int(10)), ("sleep", Value::Int(5)), ("run", Value::Int(20))]);
    }

    #[test]
    fn accepts_comments_trailing_commas_and_bare_keys() {
        let text = "{\n /* a\n comment */ \"a\" : [1, 2,], // to the end\n \"suspend\",\n \"b\": {\"c\": true,},\n}";
        let n = parse(text).unwrap();
        let e = obj(&n);
        assert_eq!(e.len(), 3);
        assert_eq!(
            e[0].1.value,
            Value::Array(vec![Node { value: Value::Int(1), line: 3 }, Node { value: Value::Int(2), line: 3 }])
        );
        assert_eq!(e[1], ("suspend".to_string(), Node { value: Value::Missing, line: 4 }));
        assert_eq!(e[2].1.line, 5);
    }

    #[test]
    fn reads_strings_numbers_and_words() {
        let n = parse(r#"["a\"b\u00e9", -3, 2.5, 1e3, null, false]"#).unwrap();
        let Value::Array(items) = n.value else { panic!() };
        let values: Vec<_> = items.into_iter().map(|n| n.value).collect();
        assert_eq!(
            values,
            vec![
                Value::Str("a\"bé".into()),
                Value::Int(-3),
                Value::Float(2.5),
                Value::Float(1000.0),
                Value::Null,
                Value::Bool(false)
            ]
        );
    }

    #[test]
    fn syntax_errors_say_where() {
        let cases = [
            ("{\n  \"a\" 1\n}", 2, "expected ':'"),
            ("{\"a\": 1", 1, "end of the document"),
            ("{\"a\": tru}", 1, "unexpected word 'tru'"),
            ("{\"a\": 1} x", 1, "after the end"),
            ("{\n\"a\": \"open\n}", 2, "unterminated string"),
            ("/* never closed", 1, "unterminated /* comment"),
            ("{\"a\": 1 \"b\": 2}", 1, "expected ',' or '}'"),
        ];
        for (text, line, what) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.to_string().contains(what), "{text}: {e}");
        }
    }

    /// Found by fuzzing: an unknown escape of a character of several bytes once cut it in two.
    #[test]
    fn an_unknown_escape_of_a_wide_character_names_it_whole() {
        let e = parse("{\"é\\ௐ\": 1}").unwrap_err();
        assert_eq!((e.line, e.column), (1, 5), "{e}");
        assert!(e.to_string().contains("unknown escape '\\ௐ'"), "{e}");
    }
}
