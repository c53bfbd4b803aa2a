//! Derives for the configuration schema of `mlperf-config`.
//!
//! * `#[derive(Bake)]` emits a Rust constant expression for a value, so that build.rs can write
//!   the resolved configuration into `OUT_DIR` as `static` tables (the role databake plays in ICU4X;
//!   written here because our tables use `Cow<'static, _>` so that one type serves both the
//!   build-time owned form and the baked borrowed form).
//! * `#[derive(ConfigFields)]` turns the one schema struct into the field registry (`FIELDS`): name,
//!   doc line, value kind, unit, applicability, required-ness and LoadGen key of every field, plus a
//!   by-name setter and getter used by the resolver and by `mlperf config show`.
//!
//! Baked paths are `::mlperf_config::<TypeName>`: every baked type is re-exported at the crate root.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{Data, DeriveInput, Expr, ExprLit, Fields, Lit, LitStr, Meta, parse_macro_input, spanned::Spanned};

#[proc_macro_derive(Bake)]
pub fn derive_bake(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    let name = &input.ident;
    let path = format!("::mlperf_config::{name}");
    let body = match &input.data {
        Data::Struct(data) => {
            let Fields::Named(fields) = &data.fields else {
                return syn::Error::new(input.span(), "Bake needs named fields").to_compile_error().into();
            };
            let parts = fields.named.iter().map(|f| {
                let ident = f.ident.as_ref().expect("named");
                let label = format!("{ident}: ");
                quote! { out.push_str(#label); crate::bake::Bake::bake_into(&self.#ident, out); out.push_str(", "); }
            });
            quote! { out.push_str(#path); out.push_str(" { "); #(#parts)* out.push('}'); }
        }
        Data::Enum(data) => {
            let arms = data.variants.iter().map(|v| {
                let vident = &v.ident;
                let vpath = format!("{path}::{vident}");
                match &v.fields {
                    Fields::Unit => quote! { Self::#vident => out.push_str(#vpath), },
                    Fields::Unnamed(f) if f.unnamed.len() == 1 => quote! {
                        Self::#vident(inner) => { out.push_str(#vpath); out.push('('); crate::bake::Bake::bake_into(inner, out); out.push(')'); }
                    },
                    _ => syn::Error::new(v.span(), "Bake supports unit and one-field tuple variants").to_compile_error(),
                }
            });
            quote! { match self { #(#arms)* } }
        }
        Data::Union(_) => return syn::Error::new(input.span(), "Bake does not support unions").to_compile_error().into(),
    };
    quote! {
        impl crate::bake::Bake for #name {
            fn bake_into(&self, out: &mut String) { #body }
        }
    }
    .into()
}

/// One `#[field(...)]` attribute, parsed.
#[derive(Default)]
struct FieldAttr {
    group: Option<LitStr>,
    unit: Option<LitStr>,
    benchmarks: Vec<LitStr>,
    scenarios: Vec<LitStr>,
    harness: Vec<LitStr>,
    power: Option<LitStr>,
    required: Vec<LitStr>,
    loadgen: Option<LitStr>,
}

fn lit_list(expr: &Expr) -> syn::Result<Vec<LitStr>> {
    match expr {
        Expr::Array(arr) => arr.elems.iter().map(lit_str).collect(),
        other => Ok(vec![lit_str(other)?]),
    }
}

fn lit_str(expr: &Expr) -> syn::Result<LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Ok(s.clone()),
        other => Err(syn::Error::new(other.span(), "expected a string literal")),
    }
}

fn parse_field_attr(field: &syn::Field) -> syn::Result<(FieldAttr, String)> {
    let mut attr = FieldAttr::default();
    let mut doc = Vec::new();
    for a in &field.attrs {
        if a.path().is_ident("doc") {
            if let Meta::NameValue(nv) = &a.meta {
                doc.push(lit_str(&nv.value)?.value().trim().to_string());
            }
        } else if a.path().is_ident("field") {
            a.parse_nested_meta(|meta| {
                let key = meta.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                let value: Expr = meta.value()?.parse()?;
                match key.as_str() {
                    "group" => attr.group = Some(lit_str(&value)?),
                    "unit" => attr.unit = Some(lit_str(&value)?),
                    "benchmarks" => attr.benchmarks = lit_list(&value)?,
                    "scenarios" => attr.scenarios = lit_list(&value)?,
                    "harness" => attr.harness = lit_list(&value)?,
                    "power" => attr.power = Some(lit_str(&value)?),
                    "required" => attr.required = lit_list(&value)?,
                    "loadgen" => attr.loadgen = Some(lit_str(&value)?),
                    other => return Err(meta.error(format!("unknown field attribute `{other}`"))),
                }
                Ok(())
            })?;
        }
    }
    let doc = doc.join(" ");
    if doc.is_empty() {
        return Err(syn::Error::new(field.span(), "every config field needs a doc comment (it is the field's help line)"));
    }
    Ok((attr, doc))
}

fn opt(lit: &Option<LitStr>) -> Tokens {
    match lit {
        Some(l) => quote!(Some(#l)),
        None => quote!(None),
    }
}

#[proc_macro_derive(ConfigFields, attributes(field))]
pub fn derive_config_fields(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match config_fields(&input) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn config_fields(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new(input.span(), "ConfigFields needs a struct"));
    };
    let Fields::Named(fields) = &data.fields else {
        return Err(syn::Error::new(input.span(), "ConfigFields needs named fields"));
    };
    let mut specs = Vec::new();
    let mut set_arms = Vec::new();
    let mut get_arms = Vec::new();
    for (index, f) in fields.named.iter().enumerate() {
        let ident = f.ident.as_ref().expect("named");
        let fname = ident.to_string();
        let (attr, doc) = parse_field_attr(f)?;
        let ty = &f.ty;
        let group = attr.group.ok_or_else(|| syn::Error::new(f.span(), "missing `group`"))?;
        let unit = opt(&attr.unit);
        let loadgen = opt(&attr.loadgen);
        let power = opt(&attr.power);
        let (benchmarks, scenarios, harness, required) = (&attr.benchmarks, &attr.scenarios, &attr.harness, &attr.required);
        specs.push(quote! {
            crate::field::FieldSpec {
                name: #fname,
                doc: #doc,
                group: #group,
                kind: <#ty as crate::field::FieldType>::KIND,
                unit: #unit,
                benchmarks: &[#(#benchmarks),*],
                scenarios: &[#(#scenarios),*],
                harness: &[#(#harness),*],
                power: #power,
                required_for: &[#(#required),*],
                loadgen_key: #loadgen,
            }
        });
        set_arms.push(quote! {
            #index => { self.#ident = <#ty as crate::field::FieldType>::parse(value, &Self::FIELDS[#index])?; Ok(()) }
        });
        get_arms.push(quote! { #index => crate::field::FieldType::show(&self.#ident), });
    }
    Ok(quote! {
        impl #name {
            /// The field registry: one entry per config field, in declaration order.
            pub const FIELDS: &'static [crate::field::FieldSpec] = &[#(#specs),*];

            /// Sets field number `index` (an index into `FIELDS`) from a raw TOML value.
            pub fn set(&mut self, index: usize, value: &crate::raw::Spanned<crate::raw::RawValue>) -> Result<(), crate::field::ValueError> {
                match index {
                    #(#set_arms)*
                    _ => unreachable!("field index out of range"),
                }
            }

            /// The value of field number `index` as config text, or None when unset.
            pub fn get(&self, index: usize) -> Option<String> {
                match index {
                    #(#get_arms)*
                    _ => unreachable!("field index out of range"),
                }
            }
        }
    })
}
