use super::*;

/// Each rule family on its own, then every recorded case of the real normalizer.
fn check(cases: &[(&str, &str)]) {
    for (input, want) in cases {
        assert_eq!(normalize(input), *want, "{input:?}");
    }
}

#[test]
fn brackets_parentheses_and_fillers_are_removed() {
    check(&[("hmm um uh well [noise] (laughs) <unk> mm", "well"), ("a (b) [c] <d> e", "a e"), ("summer umbrella", "summer umbrella")]);
}

#[test]
fn contractions_and_titles_are_spelled_out() {
    check(&[
        ("he won't go; they can't, i'm sure", "he will not go they can not i am sure"),
        ("it's been done, she'd gone, he's got it", "it has been done she had gone he has got it"),
        ("let's say y'all gonna wanna see", "let us say you all going to want to see"),
        ("st. john and dr. jones, esq. jr.", "saint john and doctor jones esquire junior"),
        ("one's own", "one is own"),
        ("i 'll", "i will"),
    ]);
}

#[test]
fn spelled_numbers_become_digits() {
    check(&[
        ("two thousand five hundred and six", "2506"),
        ("one oh one", "101"),
        ("nineteen ninety", "1990"),
        ("twenty first of may", "21st of may"),
        ("the nineteen sixties", "the 1960s"),
        ("double five triple oh", "55000"),
        ("one two point three four", "12.34"),
        ("three and a half million", "3500000"),
        ("ninety ninth", "90 ninth"),
        ("one", "one"),
        ("1s and 1", "ones and one"),
        ("192.168.1.1", "192.168 one one"),
        ("1,000,000 people", "1000000 people"),
    ]);
}

#[test]
fn currencies_signs_and_percentages_attach_to_numbers() {
    check(&[
        ("Mr. Smith paid twenty dollars", "mister smith paid $20"),
        ("two dollars and seven cents", "$2.07"),
        ("zero point oh seven dollars", "¢7"),
        ("£5 and ¢50", "£5.50"),
        ("fifty per cent", "50%"),
        ("ten % off", "10 off"),
        ("minus twelve", "-12"),
        ("minus sign", "minus sign"),
        ("plus one", "+one"),
        ("euro twenty", "euro 20"),
    ]);
}

#[test]
fn british_spellings_symbols_and_diacritics() {
    check(&[
        ("the colour of grey aeroplanes and centre theatres", "the color of gray airplanes and center theaters"),
        ("Café naïve façade Œuvre straße þorn", "cafe naive facade oeuvre strasse thorn"),
        ("a—b…c “quoted” ‘single’ #hash @at", "a b . c quoted single hash at"),
        ("   spaced    out   ", "spaced out"),
    ]);
}

#[test]
fn every_recorded_case_of_openai_whispers_normalizer_agrees() {
    // scripts/make_whisper_fixtures.py: EnglishTextNormalizer of openai-whisper 20250625.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/accuracy/whisper/normalizer_cases.json");
    let cases: Vec<(String, String)> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(cases.len() > 400, "{}", cases.len());
    let wrong: Vec<String> = cases.iter().filter(|(i, o)| normalize(i) != *o).map(|(i, o)| format!("{i:?}: {:?}, Python {o:?}", normalize(i))).collect();
    assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), cases.len(), wrong.join("\n"));
}
