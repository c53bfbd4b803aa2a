use super::accuracy::{HierarchicalF1, hierarchical_components, parse_product_metadata};
use super::catalogue::ImageFormat;
use super::catalogue::Truth;
use super::request::{python_list_repr, python_str_repr, system_text};

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
    for (value, expected) in
        [("1", Some(true)), ("-0", Some(false)), ("1e0", Some(true)), ("10e-1", Some(true)), ("\"FaLsE\"", Some(false)), ("\"t\"", Some(true)), ("\"off\"", Some(false))]
    {
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
    assert_eq!(hierarchical_components(" A >  B ", "A > B"), (2, 2, 2), "levels are stripped after splitting on ' > '");
    assert_eq!(hierarchical_components("A>B", "A > B"), (0, 1, 2), "only ' > ' separates levels");
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
    assert!(text.starts_with("Results\n\n{\"f1\": 0.3636363636363636}\n\nhash="), "{text}");
    assert_eq!(text.len(), "Results\n\n{\"f1\": 0.3636363636363636}\n\nhash=".len() + 64);
}

/// tests/fixtures/qwen3vl (scripts/make_qwen3vl_fixtures.py, from the reference code).
fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/qwen3vl")
}

#[test]
fn the_catalogue_is_read_train_then_test_with_images_as_stored() {
    let catalogue = super::catalogue::Catalogue::find(&fixtures().join("catalogue")).unwrap();
    let names: Vec<String> = catalogue.files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["train-00000-of-00001.parquet", "test-00000-of-00001.parquet"]);
    let products = catalogue.products().unwrap();
    assert_eq!(products.len(), 12);
    assert_eq!(products[1].title, "Men's shirt #1");
    assert_eq!(products[0].description, "");
    assert_eq!(
        products[1].truth,
        Truth { category: "Home & Garden > Kitchen & Dining > Tableware > Drinkware > Mugs".into(), brand: "Giorgio Armani".into(), is_secondhand: false }
    );
    assert!(products[1].image.bytes.starts_with(&[0xFF, 0xD8, 0xFF]), "the JPEG's stored bytes");
    let truths = catalogue.truths().unwrap();
    assert_eq!(truths, products.iter().map(|p| p.truth.clone()).collect::<Vec<_>>(), "the ground truth alone, without images");
}

#[test]
fn requests_are_the_references_texts_and_image_formats() {
    let expected: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(fixtures().join("requests.json")).unwrap()).unwrap();
    let products = super::catalogue::Catalogue::find(&fixtures().join("catalogue")).unwrap().products().unwrap();
    assert_eq!(expected.len(), products.len());
    for (i, (want, product)) in expected.iter().zip(&products).enumerate() {
        assert_eq!(system_text(), want["system"].as_str().unwrap(), "product {i}: system text");
        assert_eq!(super::request::user_text(product), want["user"].as_str().unwrap(), "product {i}: user text");
        assert_eq!(format!("data:image/{};base64,", product.image.format.pil_name()), want["image_url_prefix"].as_str().unwrap(), "product {i}");
    }
}

#[test]
fn the_score_agrees_with_the_references_evaluation_on_tricky_responses() {
    let truths = super::catalogue::Catalogue::find(&fixtures().join("catalogue")).unwrap().truths().unwrap();
    let score = super::accuracy::score_log(&fixtures().join("mlperf_log_accuracy.json"), &truths).unwrap();
    let official = std::fs::read_to_string(fixtures().join("accuracy.txt")).unwrap();
    assert_eq!(score.accuracy_txt(), official);
    assert_eq!(score.unparsable, 6, "the reference logs 6 unparsable responses");
    let scored = score.scored();
    let pattern = crate::accuracy::target::python_regex(r#"\{.*"f1":\s*([\d\.]+).*\}"#).unwrap();
    let line = scored.text.lines().find_map(|l| crate::accuracy::target::first_group(&pattern, l)).unwrap();
    assert_eq!(line.parse::<f64>().unwrap(), scored.metrics[0].1);
}

#[test]
fn a_catalogue_without_a_column_or_with_a_foreign_image_is_named() {
    let err = super::catalogue::Catalogue::find(&fixtures().join("missing-column")).unwrap().truths().unwrap_err().to_string();
    assert!(err.contains("train-00000-of-00001.parquet: no column `ground_truth_category`") && err.contains("`product_title`"), "{err}");
    let err = super::catalogue::Catalogue::find(&fixtures().join("bad-image")).unwrap().products().unwrap_err().to_string();
    assert!(err.contains("train-00000-of-00001.parquet: row 5, column `product_image`") && err.contains("3c 68 74 6d 6c"), "{err}");
    let err = super::catalogue::Catalogue::find(&fixtures().join("nowhere")).unwrap_err().to_string();
    assert!(err.contains("nowhere: no parquet files") && err.contains("Shopify/product-catalogue"), "{err}");
    let e: crate::Error = super::error::Qwen3VlError::NoFiles { dir: "x".into() }.into();
    assert!(matches!(e, crate::Error::Data(_)));
}

#[test]
fn stand_in_answers_are_the_ground_truth_keyed_by_the_user_text_and_score_perfectly() {
    let products: Vec<_> = (0..20).map(super::synthetic::product).collect();
    let answers = super::reference_answers(&products);
    assert_eq!(answers.len(), 20);
    let mut score = HierarchicalF1::default();
    for p in &products {
        let answer = &answers[&super::request::user_text(p)];
        assert!(p.categories.contains(&p.truth.category));
        assert_eq!(parse_product_metadata(answer).unwrap().category, p.truth.category);
        score.add(answer, &p.truth);
    }
    assert_eq!(score.f1(), 1.0);
}

#[test]
fn a_products_request_carries_both_messages_the_stored_image_and_no_sampling_fields() {
    use crate::engines::serving::api::Payload;
    use base64::Engine as _;
    let product = super::synthetic::product(3);
    let (stored, user) = (product.image.bytes.clone(), super::request::user_text(&product));
    let chat = super::request::chat(&system_text().into(), product);
    let (content_type, body) = Payload::Chat(std::sync::Arc::new(chat)).body(mlperf_config::ServingApi::CompletionsTokenIds, "qwen", 150);
    assert_eq!(content_type, "application/json");
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["messages"][0], serde_json::json!({ "role": "system", "content": system_text() }));
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["messages"][1]["content"][0], serde_json::json!({ "type": "text", "text": user }));
    let url = body["messages"][1]["content"][1]["image_url"]["url"].as_str().unwrap();
    let data = url.strip_prefix("data:image/PNG;base64,").unwrap();
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(data).unwrap(), &stored[..], "the file's bytes, not re-encoded");
    assert_eq!(body["max_tokens"], 150);
    for field in ["temperature", "top_p", "top_k", "min_p", "repetition_penalty", "response_format"] {
        assert!(body.get(field).is_none(), "{field}: the server's generation config decides");
    }
}

#[test]
fn loadgen_gets_the_text_bytes_and_the_engines_token_count() {
    let out = crate::engines::serving::api::Output { text: "{\"a\": \"é\"}".into(), engine_count: Some(7), ..Default::default() };
    assert_eq!((super::RESPOND.complete)(&out), ("{\"a\": \"é\"}".as_bytes().to_vec(), 7));
    assert_eq!((super::RESPOND.first)(&out), "{\"a\": \"é\"}".as_bytes());
}
