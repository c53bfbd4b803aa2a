//! The chat request of one product, exactly as the reference builds it
//! (`ShopifyGlobalCatalogue.formulate_loaded_sample`, `multimodal/qwen3-vl/src/mlperf_inf_mm_q3vl/task.py`,
//! mlcommons/inference@b66003e1): a system message with the instructions and `ProductMetadata`'s JSON
//! schema, and a user message with one text part (title, description, candidate categories) and the
//! product's image as a `data:` URI.
//!
//! The image is sent as stored, never decoded or re-encoded. The reference's LoadGen client re-saves
//! it through PIL (`image.save(BytesIO(), format=image.format)`), which re-encodes a JPEG; the rules
//! (no resizing or re-encoding) and the endpoints client send the stored bytes, as this does.

use super::catalogue::Product;
use crate::engines::serving::api::{Chat, ChatMessage, Content, Image, Part, Role};
use std::sync::Arc;
use unicode_general_category::{GeneralCategory, get_general_category};

/// `json.dumps(ProductMetadata.model_json_schema(), indent=2)`, computed with pydantic 2.14.4
/// (pydantic-core 2.50.5, Python 3.11) from `schema.py`'s `ProductMetadata` and its base class
/// (`use_attribute_docstrings=True, extra="forbid"`), mlcommons/inference@b66003e1. The file has no
/// trailing newline, as `json.dumps` writes none.
const PRODUCT_METADATA_SCHEMA: &str = include_str!("product_metadata_schema.json");

/// The system message (task.py's f-string, its typo "specifc" and "followng" included).
pub fn system_text() -> String {
    format!(
        "Please analyze the product from the user prompt
and provide the following fields in a valid JSON object:
- category
- brand
- is_secondhand

You must choose only one, which is the most appropriate, correct, and specifc
category out of the list of possible product categories.

The description of the product sometimes contains various types of source code
(e.g., JavaScript, CSS, HTML, etc.), where useful product information is embedded
somewhere inside the source code. For this task, you should extract the useful
product information from the source code and leverage it, and discard the
programmatic parts of the source code.

Your response should only contain a valid JSON object and nothing more, e.g.,
you should not fence the JSON object inside a ```json code block.
The JSON object should match the followng JSON schema:
```json
{PRODUCT_METADATA_SCHEMA}
```
"
    )
}

/// The user message's text part: the f-string renders the categories list as Python's `str(list)`.
pub fn user_text(product: &Product) -> String {
    format!(
        "The title of the product is the following:
```text
{}
```

The description of the product is the following:
```text
{}
```

The following are the possible product categories:
```json
{}
```
",
        product.title,
        product.description,
        python_list_repr(&product.categories)
    )
}

/// A product's chat request: the system message `system` ([`system_text`]), then the user
/// message's text part and its image, moved into the request as stored.
pub fn chat(system: &Arc<str>, product: Product) -> Chat {
    let user = user_text(&product);
    let image = Image { format: product.image.format.pil_name(), bytes: product.image.bytes };
    Chat {
        messages: vec![
            ChatMessage { role: Role::System, content: Content::Text(system.clone()) },
            ChatMessage { role: Role::User, content: Content::Parts(vec![Part::Text(user.into()), Part::Image(image)]) },
        ],
    }
}

/// Python's `str(list_of_str)`: `['a', "b's"]`.
pub fn python_list_repr(items: &[String]) -> String {
    let parts: Vec<String> = items.iter().map(|s| python_str_repr(s)).collect();
    format!("[{}]", parts.join(", "))
}

/// Python's `repr(str)`: single quotes unless the text has a `'` and no `"`; backslashes, the
/// quote and `\t \n \r` escaped; other characters that `str.isprintable()` refuses as `\xhh`,
/// `\uhhhh` or `\Uhhhhhhhh`. Printability follows this build's Unicode tables, which may be newer
/// than the Python that formatted the reference's prompts (only unassigned code points differ).
pub fn python_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !python_printable(c) => {
                let code = u32::from(c);
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// `str.isprintable()` for one character: not "Other" (Cc, Cf, Cs, Co, Cn) nor a separator other
/// than the ASCII space (Zl, Zp, Zs).
fn python_printable(c: char) -> bool {
    use GeneralCategory as G;
    c == ' '
        || !matches!(get_general_category(c), G::Control | G::Format | G::Surrogate | G::PrivateUse | G::Unassigned | G::LineSeparator | G::ParagraphSeparator | G::SpaceSeparator)
}
