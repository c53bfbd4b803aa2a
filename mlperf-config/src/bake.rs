//! Const emission: every table type can write itself as a Rust constant expression.
//!
//! Build-time values own their data (`Cow::Owned`); baked values borrow `'static` literals
//! (`Cow::Borrowed`), so one type serves both sides.

use std::borrow::Cow;

/// A value that can be written as a Rust constant expression of its own type.
pub trait Bake {
    fn bake_into(&self, out: &mut String);

    fn bake(&self) -> String {
        let mut out = String::new();
        self.bake_into(&mut out);
        out
    }
}

macro_rules! bake_int {
    ($($t:ty),*) => {$(
        impl Bake for $t {
            fn bake_into(&self, out: &mut String) {
                out.push_str(&format!("{}{}", self, stringify!($t)));
            }
        }
    )*};
}
bake_int!(u8, u16, u32, u64, usize, i64);

impl Bake for f64 {
    fn bake_into(&self, out: &mut String) {
        assert!(self.is_finite(), "only finite floats are baked");
        // `{:?}` always keeps a decimal point or exponent, so the literal stays an f64.
        out.push_str(&format!("{self:?}f64"));
    }
}

impl Bake for bool {
    fn bake_into(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl Bake for Cow<'static, str> {
    fn bake_into(&self, out: &mut String) {
        out.push_str(&format!("::std::borrow::Cow::Borrowed({:?})", self.as_ref()));
    }
}

impl<T: Bake + Clone> Bake for Cow<'static, [T]> {
    fn bake_into(&self, out: &mut String) {
        out.push_str("::std::borrow::Cow::Borrowed(&[");
        for item in self.iter() {
            item.bake_into(out);
            out.push_str(", ");
        }
        out.push_str("])");
    }
}

impl<T: Bake> Bake for Option<T> {
    fn bake_into(&self, out: &mut String) {
        match self {
            None => out.push_str("None"),
            Some(v) => {
                out.push_str("Some(");
                v.bake_into(out);
                out.push(')');
            }
        }
    }
}

impl<A: Bake, B: Bake> Bake for (A, B) {
    fn bake_into(&self, out: &mut String) {
        out.push('(');
        self.0.bake_into(out);
        out.push_str(", ");
        self.1.bake_into(out);
        out.push(')');
    }
}
