use super::accuracy::{HierarchicalF1, hierarchical_components, parse_product_metadata};
use super::catalogue::Truth;
use super::request::{ImageFormat, python_list_repr, python_str_repr, system_text};

#[test]
fn pythons_repr_of_strings_and_lists() {
    assert_eq!(python_str_repr("plain"), "'plain'");
    assert_eq!(python_str_repr("men's"), "\"men's\"");
    assert_eq!(python_str_repr("say \"hi\" it's"), "'say \"hi\" it\\'s'");
    assert_eq!(python_str_repr("a\\b\tc\nd\re"), "'a\\\\b\\tc\\nd\\re'");
    assert_eq!(python_str_repr("x\u{7}\u{a0}\u{200b}é😀\u{e000}"), "'x\\x07\\xa0\\u200bé😀\\ue000'");
    assert_eq!(python_list_repr(&["A > B".into(), "C's".into()]), "['A > B', \"C's\"]");
    assert_eq!(python_list_repr(&[]), "[]");
}

#[test]
fn the_system_text_embeds_the_schema_as_pydantic_prints_it() {
    let text = system_text();
    assert!(text.starts_with("Please analyze the product from the user prompt\nand provide"), "{text}");
    assert!(text.contains("```json\n{\n  \"additionalProperties\": false,\n"), "{text}");
    assert!(text.ends_with("  \"type\": \"object\"\n}\n```\n"), "{text}");
}

#[test]
fn image_formats_are_named_as_pil_names_them() {
    assert_eq!(ImageFormat::detect(&[0xFF, 0xD8, 0xFF, 0xE0, 0, 0]).map(ImageFormat::pil_name), Some("JPEG"));
    assert_eq!(ImageFormat::detect(b"\x89PNG\r\n\x1a\n....").map(ImageFormat::pil_name), Some("PNG"));
    assert_eq!(ImageFormat::detect(b"GIF89a..").map(ImageFormat::pil_name), Some("GIF"));
    assert_eq!(ImageFormat::detect(b"RIFF\x10\0\0\0WEBPVP8 ").map(ImageFormat::pil_name), Some("WEBP"));
    assert_eq!(ImageFormat::detect(b"RIFF\x10\0\0\0WAVEfmt "), None);
    assert_eq!(ImageFormat::detect(b"<html>"), None);
    let err = ImageFormat::of_image(b"<html>", std::path::Path::new("x.parquet"), 7).unwrap_err().to_string();
    assert!(err.contains("x.parquet: row 7, column `product_image`") && err.contains("3c 68 74 6d 6c 3e"), "{err}");
}

#[test]
fn responses_validate_as_pydantic_validates_product_metadata() {
    let ok = |t: &str| parse_product_metadata(t).map(|m| (m.category, m.is_secondhand));
    assert_eq!(ok(r#"{"category":"a","brand":"b","is_secondhand":false}"#), Some(("a".into(), false)));
    assert_eq!(ok(" \n{\"category\":\"a\",\"brand\":\"b\",\"is_secondhand\":false}\n "), Some(("a".into(), false)));
    assert_eq!(ok(r#"{"category":"a","category":"c","brand":"b","is_secondhand":"Yes"}"#), Some(("c".into(), true)), "the last duplicate wins");
    for (value, expected) in [("1", Some(true)), ("-0", Some(false)), ("1e0", Some(true)), ("10e-1", Some(true)), ("\"FaLsE\"", Some(false)), ("\"t\"", Some(true)), ("\"off\"", Some(false))] {
        assert_eq!(ok(&format!(r#"{{"category":"a","brand":"b","is_secondhand":{value}}}"#)).map(|m| m.1), expected, "{value}");
    }
    for bad in [
        r#"{"category":"a","brand":"b","is_secondhand":false} x"#,
        r#"{"category":"a","brand":"b","is_secondhand":false,"x":1}"#,
        r#"{"category":"a","brand":"b","is_secondhand":" true"}"#,
        r#"{"category":"a","brand":"b","is_secondhand":2}"#,
        r#"{"category":"a","brand":"b","is_secondhand":0.5}"#,
        r#"{"category":"a","brand":"b","is_secondhand":null}"#,
        r#"{"category":"a","brand":"b","is_secondhand":"none"}"#,
        r#"{"category":1,"brand":"b","is_secondhand":true}"#,
        r#"{"category":"\ud800","brand":"b","is_secondhand":true}"#,
        r#"{"category":"a","brand":"b","is_secondhand":true,}"#,
        r#"[{"category":"a","brand":"b","is_secondhand":true}]"#,
        r#"{"category":"a","brand":"b","is_secondhand":true,"category":5}"#,
        r#"{"category":"a","brand":"b","is_secondhand":01}"#,
        r#"{"category":"a","brand":"b"}"#,
        "```json\n{\"category\":\"a\",\"brand\":\"b\",\"is_secondhand\":true}\n```",
        "\u{feff}{\"category\":\"a\",\"brand\":\"b\",\"is_secondhand\":true}",
        "",
    ] {
        assert_eq!(parse_product_metadata(bad), None, "{bad}");
    }
}

#[test]
fn hierarchical_f1_counts_common_prefixes_and_pads_unparsable_answers() {
    assert_eq!(hierarchical_components("A > B > C", "A > B > D > E"), (2, 3, 4));
    assert_eq!(hierarchical_components(" A >  B ", "A > B"), (1, 2, 2), "levels are stripped after splitting on ' > '");
    assert_eq!(hierarchical_components("", "A"), (0, 1, 1));
    let truth = Truth { category: "A > B > C".into(), brand: "x".into(), is_secondhand: false };
    let mut f1 = HierarchicalF1::default();
    f1.add(r#"{"category":"A > B","brand":"x","is_secondhand":false}"#, &truth);
    f1.add("not json", &truth);
    assert_eq!((f1.intersection, f1.predicted, f1.truth, f1.unparsable), (2, 5, 6, 1));
    let (hp, hr) = (2.0 / 5.0, 2.0 / 6.0);
    assert_eq!(f1.f1(), 2.0 * (hp * hr) / (hp + hr));
    assert_eq!(HierarchicalF1::default().f1(), 0.0);
    let text = f1.accuracy_txt();
    assert!(text.starts_with("Results\n\n{\"f1\": 0.36363636363636365}\n\nhash="), "{text}");
    assert_eq!(text.len(), "Results\n\n{\"f1\": 0.36363636363636365}\n\nhash=".len() + 64);
}
