//! A reader of Python pickles (protocols 2 to 5) that builds values and never runs code: where
//! Python would call a function (`REDUCE`, `NEWOBJ`) or set an object's state (`BUILD`), this
//! reader records the call as an [`Value::Object`] for the caller to interpret ([`super::pandas`]
//! reads DataFrames from them). Hand-written because no maintained crate reads the REDUCE / BUILD
//! graph of pandas and numpy objects (serde-pickle refuses globals); it follows the opcode table of
//! CPython's `pickletools`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// One value of the pickle. Containers are shared (`Rc`) because the memo refers to them, and a
/// list is filled after it was memoized.
#[derive(Debug, Clone)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    /// `bytes` or `bytearray`.
    Bytes(Rc<[u8]>),
    List(Rc<RefCell<Vec<Value>>>),
    Tuple(Rc<[Value]>),
    /// A dict's items in insertion order; sets are lists here.
    Dict(Rc<RefCell<Vec<(Value, Value)>>>),
    /// A name imported by the pickle (`module.name`), called or instantiated by [`Object`].
    Global(Rc<Global>),
    Object(Rc<RefCell<Object>>),
}

#[derive(Debug, PartialEq, Eq)]
pub struct Global {
    pub module: String,
    pub name: String,
}

/// What Python would have built by calling `callable(*args)` and then applying `state`.
#[derive(Debug)]
pub struct Object {
    pub callable: Value,
    pub args: Vec<Value>,
    pub state: Option<Value>,
}

impl Value {
    pub fn as_str(&self) -> Option<&str> {
        if let Value::Str(s) = self { Some(s) } else { None }
    }

    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Bool(b) => Some(i64::from(*b)),
            _ => None,
        }
    }

    /// A non-negative integer (a size, a position) as a `usize`.
    pub fn as_usize(&self) -> Option<usize> {
        self.as_int().and_then(|i| usize::try_from(i).ok())
    }

    /// The items of a tuple or list.
    pub fn items(&self) -> Option<Vec<Value>> {
        match self {
            Value::Tuple(items) => Some(items.to_vec()),
            Value::List(items) => Some(items.borrow().clone()),
            _ => None,
        }
    }

    /// The value of string key `key` of a dict.
    pub fn get(&self, key: &str) -> Option<Value> {
        let Value::Dict(items) = self else { return None };
        items.borrow().iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v.clone())
    }

    /// `module.name` when this is an object built by calling a global.
    pub fn built_by(&self) -> Option<String> {
        let Value::Object(object) = self else { return None };
        match &object.borrow().callable {
            Value::Global(g) => Some(format!("{}.{}", g.module, g.name)),
            _ => None,
        }
    }

    /// Whether this is an object built by a global whose `module.name` ends with `suffix`.
    pub fn built_by_ends(&self, suffix: &str) -> bool {
        self.built_by().is_some_and(|b| b.ends_with(suffix))
    }

    /// The arguments of the call that built this object (none for other values).
    pub fn args(&self) -> Vec<Value> {
        match self {
            Value::Object(object) => object.borrow().args.clone(),
            _ => Vec::new(),
        }
    }

    /// The state set on this object (`BUILD`), if any.
    pub fn state(&self) -> Option<Value> {
        match self {
            Value::Object(object) => object.borrow().state.clone(),
            _ => None,
        }
    }

    /// A short description for error messages.
    pub fn kind(&self) -> String {
        match self {
            Value::None => "None".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Str(_) => "str".into(),
            Value::Bytes(_) => "bytes".into(),
            Value::List(_) => "list".into(),
            Value::Tuple(_) => "tuple".into(),
            Value::Dict(_) => "dict".into(),
            Value::Global(g) => format!("{}.{}", g.module, g.name),
            Value::Object(_) => format!("{} object", self.built_by().unwrap_or_else(|| "an".into())),
        }
    }
}

/// Why a pickle cannot be read: where it ends early, or which opcode at which byte fails and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PickleError {
    #[error("the file ends at byte {len} inside a value")]
    Truncated { len: usize },
    /// `reason` is what the opcode found wrong (the stack, the memo, an argument).
    #[error("pickle opcode {opcode:#04x} at byte {offset}: {reason}")]
    Opcode { opcode: u8, offset: usize, reason: OpcodeProblem },
    /// STOP found no value to return (an empty stack, or only a MARK's).
    #[error("{reason}")]
    Stop { reason: OpcodeProblem },
}

/// What an opcode found wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpcodeProblem {
    /// The stack, the marks or an argument is not as the opcode needs it (the text says how), or
    /// the opcode is one this reader does not read.
    #[error("{0}")]
    Static(&'static str),
    #[error("the file ends at byte {len} inside a value")]
    Ends { len: usize },
    #[error("a str that is not UTF-8: {0}")]
    NotUtf8(std::str::Utf8Error),
    #[error("an integer of {bytes} bytes (past 64 bits)")]
    LongInt { bytes: usize },
    #[error("memo entry {0} was never stored")]
    MemoMissing(u32),
    #[error("call arguments are a {0}, not a tuple")]
    CallArguments(String),
    #[error("appends to a {0}")]
    AppendsTo(String),
    #[error("sets items of a {0}")]
    SetsItemsOf(String),
    #[error("sets the state of a {0}")]
    SetsStateOf(String),
    #[error("pickle protocol {0}; this reader reads protocols 2 to 5")]
    Protocol(u64),
    #[error("a {0}-tuple of fewer values")]
    ShortTuple(usize),
}

/// `Err("pops an empty stack".into())`, `.ok_or("needs a MARK")?`.
impl From<&'static str> for OpcodeProblem {
    fn from(what: &'static str) -> OpcodeProblem {
        OpcodeProblem::Static(what)
    }
}

/// Reads the pickle in `data` and returns its one value. Errors give the byte offset.
pub fn parse(data: &[u8]) -> Result<Value, PickleError> {
    Machine { data, at: 0, stack: Vec::new(), marks: Vec::new(), memo: HashMap::new() }.run()
}

struct Machine<'a> {
    data: &'a [u8],
    at: usize,
    stack: Vec<Value>,
    /// Stack depths at each MARK.
    marks: Vec<usize>,
    memo: HashMap<u32, Value>,
}

impl Machine<'_> {
    fn run(mut self) -> Result<Value, PickleError> {
        let len = self.data.len();
        loop {
            let offset = self.at;
            let op = self.take(1).map_err(|_| PickleError::Truncated { len })?[0];
            self.step(op).map_err(|reason| PickleError::Opcode { opcode: op, offset, reason })?;
            if op == b'.' {
                return self.pop().map_err(|reason| PickleError::Stop { reason });
            }
        }
    }

    fn take(&mut self, n: usize) -> Result<&[u8], OpcodeProblem> {
        let end = self.at.checked_add(n).filter(|&end| end <= self.data.len()).ok_or(OpcodeProblem::Ends { len: self.data.len() })?;
        let bytes = &self.data[self.at..end];
        self.at = end;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> Result<u64, OpcodeProblem> {
        let bytes = self.take(n)?;
        Ok(bytes.iter().rev().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn line(&mut self) -> Result<String, OpcodeProblem> {
        let rest = &self.data[self.at..];
        let end = rest.iter().position(|&b| b == b'\n').ok_or("a text argument without its newline")?;
        let text = std::str::from_utf8(&rest[..end]).map_err(|_| "a text argument that is not UTF-8")?.to_string();
        self.at += end + 1;
        Ok(text)
    }

    /// Reads a `width`-byte little-endian argument and pushes what `build` makes of it.
    fn sized(&mut self, width: usize, build: impl FnOnce(&mut Self, u64) -> Result<Value, OpcodeProblem>) -> Result<(), OpcodeProblem> {
        let arg = self.uint(width)?;
        let value = build(self, arg)?;
        self.push(value);
        Ok(())
    }

    fn text(&mut self, n: u64) -> Result<Value, OpcodeProblem> {
        let n = length(n)?;
        let bytes = self.take(n)?;
        let text = std::str::from_utf8(bytes).map_err(OpcodeProblem::NotUtf8)?;
        Ok(Value::Str(text.into()))
    }

    fn bytes(&mut self, n: u64) -> Result<Value, OpcodeProblem> {
        let n = length(n)?;
        Ok(Value::Bytes(self.take(n)?.into()))
    }

    fn pop(&mut self) -> Result<Value, OpcodeProblem> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err("pops past a MARK".into());
        }
        self.stack.pop().ok_or_else(|| "pops an empty stack".into())
    }

    fn top(&mut self) -> Result<&Value, OpcodeProblem> {
        self.stack.last().ok_or_else(|| "needs a value on the stack".into())
    }

    /// The values pushed since the last MARK, which is removed.
    fn pop_mark(&mut self) -> Result<Vec<Value>, OpcodeProblem> {
        let mark = self.marks.pop().ok_or("needs a MARK")?;
        if mark > self.stack.len() {
            return Err("a MARK above the stack".into());
        }
        Ok(self.stack.split_off(mark))
    }

    fn push(&mut self, value: Value) {
        self.stack.push(value);
    }

    fn long(&mut self, n: u64) -> Result<Value, OpcodeProblem> {
        let bytes = self.take(length(n)?)?;
        if bytes.len() > 8 {
            return Err(OpcodeProblem::LongInt { bytes: bytes.len() });
        }
        let negative = bytes.last().is_some_and(|&b| b & 0x80 != 0);
        let mut raw = [if negative { 0xff } else { 0 }; 8];
        raw[..bytes.len()].copy_from_slice(bytes);
        Ok(Value::Int(i64::from_le_bytes(raw)))
    }

    fn memo_get(&self, key: u32) -> Result<Value, OpcodeProblem> {
        self.memo.get(&key).cloned().ok_or(OpcodeProblem::MemoMissing(key))
    }

    fn memo_put(&mut self, key: u32) -> Result<(), OpcodeProblem> {
        let value = self.top()?.clone();
        self.memo.insert(key, value);
        Ok(())
    }

    fn call(&mut self, callable: Value, args: Value) -> Result<(), OpcodeProblem> {
        let args = args.items().ok_or_else(|| OpcodeProblem::CallArguments(args.kind()))?;
        self.push(Value::Object(Rc::new(RefCell::new(Object { callable, args, state: None }))));
        Ok(())
    }

    fn append(&mut self, items: Vec<Value>) -> Result<(), OpcodeProblem> {
        match self.top()? {
            Value::List(list) => {
                list.borrow_mut().extend(items);
                Ok(())
            }
            other => Err(OpcodeProblem::AppendsTo(other.kind())),
        }
    }

    fn set_items(&mut self, items: Vec<Value>) -> Result<(), OpcodeProblem> {
        if !items.len().is_multiple_of(2) {
            return Err("an odd number of keys and values".into());
        }
        let dict = match self.top()? {
            Value::Dict(dict) => dict.clone(),
            other => return Err(OpcodeProblem::SetsItemsOf(other.kind())),
        };
        let mut dict = dict.borrow_mut();
        let mut items = items.into_iter();
        while let (Some(key), Some(value)) = (items.next(), items.next()) {
            match dict.iter_mut().find(|(k, _)| same_key(k, &key)) {
                Some(entry) => entry.1 = value,
                None => dict.push((key, value)),
            }
        }
        Ok(())
    }

    fn step(&mut self, op: u8) -> Result<(), OpcodeProblem> {
        match op {
            0x80 => {
                let protocol = self.uint(1)?;
                if !(2..=5).contains(&protocol) {
                    return Err(OpcodeProblem::Protocol(protocol));
                }
            }
            0x95 => {
                self.uint(8)?; // FRAME: a length hint only
            }
            b'.' => {}
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let top = self.top()?.clone();
                self.push(top);
            }
            b'N' => self.push(Value::None),
            0x88 => self.push(Value::Bool(true)),
            0x89 => self.push(Value::Bool(false)),
            b'J' => {
                let v = self.uint(4)? as u32 as i32;
                self.push(Value::Int(i64::from(v)));
            }
            b'K' => self.sized(1, |_, v| Ok(Value::Int(v as i64)))?,
            b'M' => self.sized(2, |_, v| Ok(Value::Int(v as i64)))?,
            0x8a => self.sized(1, Self::long)?,
            0x8b => self.sized(4, Self::long)?,
            b'G' => {
                let bits = self.take(8)?;
                let v = f64::from_be_bytes(bits.try_into().expect("8 bytes"));
                self.push(Value::Float(v));
            }
            0x8c => self.sized(1, Self::text)?,
            b'X' => self.sized(4, Self::text)?,
            0x8d => self.sized(8, Self::text)?,
            b'C' => self.sized(1, Self::bytes)?,
            b'B' => self.sized(4, Self::bytes)?,
            0x8e | 0x96 => self.sized(8, Self::bytes)?,
            b']' => self.push(Value::List(Rc::default())),
            b'l' => {
                let items = self.pop_mark()?;
                self.push(Value::List(Rc::new(RefCell::new(items))));
            }
            b'a' => {
                let item = self.pop()?;
                self.append(vec![item])?;
            }
            b'e' => {
                let items = self.pop_mark()?;
                self.append(items)?;
            }
            b')' => self.push(Value::Tuple(Rc::new([]))),
            b't' => {
                let items = self.pop_mark()?;
                self.push(Value::Tuple(items.into()));
            }
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                if self.stack.len() < n + self.marks.last().copied().unwrap_or(0) {
                    return Err(OpcodeProblem::ShortTuple(n));
                }
                let items = self.stack.split_off(self.stack.len() - n);
                self.push(Value::Tuple(items.into()));
            }
            b'}' => self.push(Value::Dict(Rc::default())),
            b'd' => {
                let items = self.pop_mark()?;
                self.push(Value::Dict(Rc::default()));
                self.set_items(items)?;
            }
            b's' => {
                let value = self.pop()?;
                let key = self.pop()?;
                self.set_items(vec![key, value])?;
            }
            b'u' => {
                let items = self.pop_mark()?;
                self.set_items(items)?;
            }
            0x8f => self.push(Value::List(Rc::default())),
            0x90 => {
                let items = self.pop_mark()?;
                self.append(items)?;
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.push(Value::List(Rc::new(RefCell::new(items))));
            }
            b'c' => {
                let module = self.line()?;
                let name = self.line()?;
                self.push(Value::Global(Rc::new(Global { module, name })));
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Some(module), Some(name)) = (module.as_str(), name.as_str()) else {
                    return Err("STACK_GLOBAL of values that are not strings".into());
                };
                self.push(Value::Global(Rc::new(Global { module: module.into(), name: name.into() })));
            }
            b'R' | 0x81 => {
                let args = self.pop()?;
                let callable = self.pop()?;
                self.call(callable, args)?;
            }
            0x92 => {
                let kwargs = self.pop()?;
                let args = self.pop()?;
                let callable = self.pop()?;
                if !matches!(&kwargs, Value::Dict(d) if d.borrow().is_empty()) {
                    return Err("NEWOBJ_EX with keyword arguments".into());
                }
                self.call(callable, args)?;
            }
            b'b' => {
                let state = self.pop()?;
                match self.top()? {
                    Value::Object(object) => object.borrow_mut().state = Some(state),
                    other => return Err(OpcodeProblem::SetsStateOf(other.kind())),
                }
            }
            0x94 => {
                let key = u32::try_from(self.memo.len()).map_err(|_| "too many memo entries")?;
                self.memo_put(key)?;
            }
            b'p' => {
                let key = self.line()?.parse().map_err(|_| "a PUT key that is not a number")?;
                self.memo_put(key)?;
            }
            b'q' => {
                let key = self.uint(1)? as u32;
                self.memo_put(key)?;
            }
            b'r' => {
                let key = self.uint(4)? as u32;
                self.memo_put(key)?;
            }
            b'g' => {
                let key = self.line()?.parse().map_err(|_| "a GET key that is not a number")?;
                let v = self.memo_get(key)?;
                self.push(v);
            }
            b'h' => self.sized(1, |m, key| m.memo_get(key as u32))?,
            b'j' => self.sized(4, |m, key| m.memo_get(key as u32))?,
            0x97 | 0x98 => return Err("an out-of-band buffer (the pickle was written with a buffer_callback); write it again without one".into()),
            b'P' | b'Q' => return Err("a persistent id (the pickle refers to objects stored outside it)".into()),
            _ => return Err("an opcode this reader does not know (protocol 0 / 1 text opcodes are not read)".into()),
        }
        Ok(())
    }
}

fn length(n: u64) -> Result<usize, OpcodeProblem> {
    usize::try_from(n).map_err(|_| OpcodeProblem::Static("a length past this machine's address space"))
}

/// Dict keys compare by value for the scalar kinds pickles use as keys.
fn same_key(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(a), Value::Str(b)) => a == b,
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Bytes(a), Value::Bytes(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memoized_list_filled_later_is_the_same_list_through_the_memo() {
        // pickle.dumps(([1, 2], "é"), protocol=4) with the list fetched again from the memo:
        // PROTO 4, EMPTY_LIST, MEMOIZE, MARK, 1, 2, APPENDS, BINGET 0, SHORT_BINUNICODE "é", TUPLE3, STOP
        let data = b"\x80\x04]\x94(K\x01K\x02eh\x00\x8c\x02\xc3\xa9\x87.";
        let value = parse(data).unwrap();
        let items = value.items().unwrap();
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].items().unwrap().iter().map(|v| v.as_int().unwrap()).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(items[2].as_str(), Some("é"));
    }

    #[test]
    fn negative_and_long_integers_and_floats() {
        // -1 as BININT, 2**40 as LONG1, 1.5 as BINFLOAT, in a TUPLE3.
        let data = b"\x80\x02J\xff\xff\xff\xff\x8a\x06\x00\x00\x00\x00\x00\x01G?\xf8\x00\x00\x00\x00\x00\x00\x87.";
        let items = parse(data).unwrap().items().unwrap();
        assert_eq!(items[0].as_int(), Some(-1));
        assert_eq!(items[1].as_int(), Some(1 << 40));
        assert!(matches!(items[2], Value::Float(f) if f == 1.5));
    }

    #[test]
    fn calls_and_state_are_recorded_not_run() {
        // builtins.slice(0, 3, 1) with a BUILD state, protocol 2 GLOBAL.
        let data = b"\x80\x02cbuiltins\nslice\nK\x00K\x03K\x01\x87R}b.";
        let value = parse(data).unwrap();
        assert_eq!(value.built_by().as_deref(), Some("builtins.slice"));
        let Value::Object(object) = &value else { panic!() };
        assert_eq!(object.borrow().args.len(), 3);
        assert!(object.borrow().state.is_some());
    }

    #[test]
    fn truncated_and_unknown_input_say_where() {
        let err = parse(b"\x80\x05\x8c\x05ab").unwrap_err().to_string();
        assert!(err.contains("at byte 2") && err.contains("ends at byte 6"), "{err}");
        let err = parse(b"\x80\x05I1\n.").unwrap_err().to_string();
        assert!(err.contains("opcode 0x49 at byte 2") && err.contains("does not know"), "{err}");
        let err = parse(b"\x80\x01").unwrap_err().to_string();
        assert!(err.contains("pickle protocol 1"), "{err}");
        let err = parse(b"\x80\x05e.").unwrap_err().to_string();
        assert!(err.contains("needs a MARK"), "{err}");
    }
}
