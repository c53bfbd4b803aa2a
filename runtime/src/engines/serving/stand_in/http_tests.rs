//! The stand-in over HTTP, with bodies as the clients that use vLLM send them: the MLCommons
//! reference llama2-70b client (`language/llama2-70b/SUT_API.py`), the `openai` SDK, curl.

use super::*;
use serde_json::{Value, json};
use std::io::Cursor;

/// What came back: status, content type and body (an error where the connection broke).
struct Answer {
    status: u16,
    content_type: String,
    body: Result<String, String>,
}

impl Answer {
    fn json(&self) -> Value {
        let body = self.body.as_ref().expect("a whole body");
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    /// The data of each server-sent event.
    fn events(&self) -> Vec<String> {
        let body = self.body.as_ref().expect("a whole stream");
        body.lines().filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:"))).map(|d| d.trim().to_string()).collect()
    }

    /// The events' JSON, `[DONE]` last.
    fn chunks(&self) -> Vec<Value> {
        let events = self.events();
        assert_eq!(events.last().map(String::as_str), Some("[DONE]"), "{events:?}");
        events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap_or_else(|err| panic!("{err}: {e}"))).collect()
    }

    /// The error message of a refusal.
    fn refusal(&self) -> String {
        let error = self.json();
        assert_eq!(error["error"]["code"], self.status, "{error}");
        error["error"]["message"].as_str().expect("a message").to_string()
    }
}

fn send(stand_in: &StandIn, method: &str, path: &str, content_type: &str, body: Vec<u8>) -> Answer {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder().timeout(Duration::from_millis(500)).build().unwrap();
        let url = format!("http://{}{path}", stand_in.addr);
        let request = if method == "GET" { client.get(url) } else { client.post(url).header("content-type", content_type).body(body) };
        match request.send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                let content_type = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
                Answer { status, content_type, body: r.text().await.map_err(|e| format!("{e:?}")) }
            }
            Err(e) => Answer { status: 0, content_type: String::new(), body: Err(format!("{e:?}")) },
        }
    })
}

fn post_json(stand_in: &StandIn, path: &str, body: &str) -> Answer {
    send(stand_in, "POST", path, "application/json", body.as_bytes().to_vec())
}

fn stand_in(options: StandInOptions) -> StandIn {
    start(StandInOptions { min_output_tokens: 3, max_output_tokens: 9, vocab: 100, ..options }).unwrap()
}

fn spelled(ids: &[i32]) -> String {
    ids.iter().map(|id| format!(" t{id}")).collect()
}

#[test]
fn the_reference_llama2_clients_offline_batch_of_token_id_prompts_is_answered_whole() {
    let server = stand_in(StandInOptions::default());
    // SUT_API.py's query_api_vllm: one request, a batch of token-id prompts, not streamed.
    let body = r#"{"model": "llama2-70b", "prompt": [[1, 2214, 338], [1, 450, 4996, 17354]], "min_tokens": 1, "max_tokens": 1024}"#;
    let answer = post_json(&server, "/v1/completions", body);
    assert_eq!((answer.status, answer.content_type.as_str()), (200, "application/json"), "{:?}", answer.body);
    let reply = answer.json();
    assert_eq!(reply["object"], "text_completion");
    assert_eq!(reply["model"], "llama2-70b");
    assert!(reply["id"].as_str().unwrap().starts_with("cmpl-"));
    let options = &server_options();
    let expected: Vec<Vec<i32>> = [vec![1, 2214, 338], vec![1, 450, 4996, 17354]].iter().map(|p| options.answer(p, 1024)).collect();
    let choices = reply["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 2);
    for (index, (choice, ids)) in choices.iter().zip(&expected).enumerate() {
        assert_eq!(choice["index"], index);
        assert_eq!(choice["text"], spelled(ids));
        assert_eq!(choice["finish_reason"], "stop", "shorter than max_tokens: the model stopped");
        assert!(choice["logprobs"].is_null() && choice.get("token_ids").is_none(), "{choice}");
    }
    let completion: usize = expected.iter().map(Vec::len).sum();
    assert_eq!(reply["usage"], json!({ "prompt_tokens": 7, "completion_tokens": completion, "total_tokens": 7 + completion }));
    // One prompt, not streamed (the issue's second refusal), with token ids asked for.
    let one = post_json(&server, "/v1/completions", r#"{"prompt": [5, 6], "max_tokens": 2, "return_token_ids": true}"#).json();
    assert_eq!(one["choices"][0]["token_ids"], json!(options.answer(&[5, 6], 2)));
    assert_eq!(one["choices"][0]["prompt_token_ids"], json!([5, 6]));
    assert_eq!(one["choices"][0]["finish_reason"], "length");
    assert_eq!(one["model"], "stand-in", "no model named: the served one");
}

/// The options [`stand_in`] serves with.
fn server_options() -> StandInOptions {
    StandInOptions { min_output_tokens: 3, max_output_tokens: 9, vocab: 100, ..StandInOptions::default() }
}

#[test]
fn the_reference_llama2_clients_streamed_text_prompt_with_logprobs_gets_the_tokenizers_tokens() {
    let server = stand_in(StandInOptions::default());
    let options = server_options();
    // SUT_API.py's stream_api_vllm: a text prompt, streamed, logprobs 1; it reads each event's
    // `choices[0].logprobs.top_logprobs[0]`'s first key and looks it up in tokenizer.json's vocab.
    let body = r#"{"model": "/opt/app-root/share/models", "prompt": "t5 t7 Hello world", "max_tokens": 1024, "temperature": 0, "stream": true, "logprobs": 1}"#;
    let answer = post_json(&server, "/v1/completions", body);
    assert_eq!((answer.status, answer.content_type.as_str()), (200, "text/event-stream"));
    let vocab: Value = serde_json::from_str(&options.tokenizer_json()).unwrap();
    let chunks = answer.chunks();
    let ids: Vec<i32> = chunks
        .iter()
        .map(|c| {
            let top = c["choices"][0]["logprobs"]["top_logprobs"][0].as_object().unwrap();
            assert_eq!(top.len(), 1, "logprobs 1: the top token");
            vocab["model"]["vocab"][top.keys().next().unwrap()].as_i64().unwrap() as i32
        })
        .collect();
    let prompt = options.encode_text("t5 t7 Hello world");
    assert_eq!(&prompt[..2], [5, 7]);
    assert_eq!(ids, options.answer(&prompt, 1024));
    assert!(chunks[0]["stand_in_ttft_us"].is_u64());
    assert!(chunks.iter().all(|c| c.get("usage").is_none()), "no stream_options: no usage chunk");
    let offsets: Vec<u64> = chunks.iter().map(|c| c["choices"][0]["logprobs"]["text_offset"][0].as_u64().unwrap()).collect();
    let text: String = chunks.iter().map(|c| c["choices"][0]["text"].as_str().unwrap()).collect();
    assert_eq!(text, spelled(&ids));
    assert_eq!(offsets[1] as usize, format!(" t{}", ids[0]).len(), "offsets count the text before each token");
    // Five top logprobs: the token and four runners-up below it.
    let five = post_json(&server, "/v1/completions", r#"{"prompt": "a", "max_tokens": 2, "logprobs": 5}"#).json();
    let top = &five["choices"][0]["logprobs"]["top_logprobs"][0];
    assert_eq!(top.as_object().unwrap().len(), 5, "{top}");
}

#[test]
fn our_clients_dialects_stream_as_before() {
    let server = stand_in(StandInOptions::default());
    let options = server_options();
    for (body, ids) in [
        (r#"{"model":"m","prompt":[1,2,3],"max_tokens":4,"temperature":0.0,"stream":true,"return_token_ids":true,"stream_options":{"include_usage":true}}"#, true),
        (r#"{"model":"m","prompt":[1,2,3],"max_tokens":4,"temperature":0.0,"stream":true,"detokenize":false,"stream_options":{"include_usage":true}}"#, true),
        (r#"{"model":"m","prompt":[1,2,3],"max_tokens":4,"temperature":0.0,"stream":true,"stream_options":{"include_usage":true}}"#, false),
    ] {
        let chunks = post_json(&server, "/v1/completions", body).chunks();
        let expected = options.answer(&[1, 2, 3], 4);
        let (usage, tokens) = chunks.split_last().unwrap();
        assert_eq!(usage["usage"]["completion_tokens"], expected.len(), "{body}");
        assert_eq!(usage["choices"], json!([]));
        let got: Vec<i32> =
            tokens.iter().flat_map(|c| c["choices"][0]["token_ids"].as_array().map(|a| a.iter().map(|i| i.as_i64().unwrap() as i32).collect::<Vec<_>>())).flatten().collect();
        let text: String = tokens.iter().map(|c| c["choices"][0]["text"].as_str().unwrap()).collect();
        assert_eq!(got, if ids { expected.clone() } else { Vec::new() }, "{body}");
        assert_eq!(text, spelled(&expected));
    }
    // A batch streams each prompt's chunks under its index.
    let chunks = post_json(&server, "/v1/completions", r#"{"prompt":[[1],[2]],"max_tokens":5,"stream":true}"#).chunks();
    for index in 0..2 {
        let text: String = chunks.iter().filter(|c| c["choices"][0]["index"] == index).map(|c| c["choices"][0]["text"].as_str().unwrap()).collect();
        assert_eq!(text, spelled(&options.answer(&[index + 1], 5)));
    }
}

#[test]
fn completion_requests_vllm_refuses_are_400s_naming_the_field_and_unknown_fields_are_ignored() {
    let server = stand_in(StandInOptions::default());
    for (body, says) in [
        (r#"{"prompt": [1], "n": 2}"#, "n = 2"),
        (r#"{"prompt": [1], "echo": true}"#, "echo"),
        (r#"{"prompt": [1], "logprobs": 21}"#, "greater than max allowed: 20"),
        (r#"{"prompt": [1], "logprobs": -2}"#, "`logprobs` must be a positive value or -1"),
        (r#"{"prompt": [1], "max_tokens": 0}"#, "max_tokens must be at least 1, got 0"),
        (r#"{"prompt": [1], "stream_options": {"include_usage": true}}"#, "only be defined when `stream=True`"),
        (r#"{"prompt": [[1, 2], "x"]}"#, "prompt[1] is a string, not a list of token ids"),
        (r#"{"prompt": [1, -1]}"#, "prompt[1] is -1, not a token id"),
        (r#"{"prompt": ""}"#, "Either prompt or prompt_embeds"),
        (r#"{"max_tokens": 3}"#, "Either prompt or prompt_embeds"),
        (r#"{"prompt": [1], "temperature": "hot"}"#, "temperature"),
        (r#"{"prompt": [1], "stop": 3}"#, "stop is a number"),
        (r#"{"prompt": [1"#, "not a request vLLM accepts"),
    ] {
        let answer = post_json(&server, "/v1/completions", body);
        assert_eq!(answer.status, 400, "{body}: {:?}", answer.body);
        let message = answer.refusal();
        assert!(message.contains(says) && message.contains("/v1/completions"), "{body}: {message}");
    }
    let accepted = r#"{"prompt": "t1", "max_tokens": 2, "seed": 7, "top_p": 0.9, "stop": ["\n"], "ignore_eos": true, "min_tokens": 1, "some_vendor_field": {"x": 1}}"#;
    assert_eq!(post_json(&server, "/v1/completions", accepted).status, 200);
    let default_limit = post_json(&server, "/v1/completions", r#"{"prompt": "t1", "max_tokens": null}"#).json();
    assert_eq!(default_limit["choices"][0]["text"], spelled(&server_options().answer(&[1], 16)), "no max_tokens: vLLM's 16");
}

/// A PNG's signature and a few bytes: the stand-in checks what an image is, never decodes it.
fn png() -> Vec<u8> {
    [&b"\x89PNG\r\n\x1a\n"[..], b"\0\0\0\rIHDR-pixels"].concat()
}

fn data_uri(format: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    format!("data:image/{format};base64,{}", base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A chat body as the `openai` SDK sends one: a system message, a user message of a text and an image.
fn chat_body(image_url: &str, extra: &str) -> String {
    format!(
        r#"{{"messages":[{{"role":"system","content":"You categorise products."}},{{"role":"user","content":[{{"type":"text","text":"Title: red kettle"}},{{"type":"image_url","image_url":{{"url":"{image_url}"}}}},{{"type":"text","text":"Answer as JSON."}}]}}],"model":"Qwen/Qwen3-VL-235B-A22B-Instruct","max_tokens":1024{extra}}}"#
    )
}

fn with_texts(key: String, text: &str) -> StandInOptions {
    StandInOptions { references: Some(Arc::new(ReferenceAnswers::texts(HashMap::from([(key, text.to_string())])))), ..StandInOptions::default() }
}

#[test]
fn the_openai_sdks_chat_with_an_image_gets_the_reference_answer_streamed_or_whole() {
    let reference = r#"{"category": "Home > Kitchen > Kettles",  "brand": "x"}"#;
    let server = stand_in(with_texts(chat_key(&["Title: red kettle", "Answer as JSON."]), reference));
    let image = data_uri("png", &png());
    let streamed = post_json(&server, "/v1/chat/completions", &chat_body(&image, r#","stream":true,"stream_options":{"include_usage":true}"#));
    assert_eq!(streamed.status, 200, "{:?}", streamed.body);
    let chunks = streamed.chunks();
    assert_eq!(chunks[0]["choices"][0]["delta"], json!({ "role": "assistant", "content": "" }));
    assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "Qwen/Qwen3-VL-235B-A22B-Instruct"));
    let (usage, deltas) = chunks.split_last().unwrap();
    let text: String = deltas.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(text, reference);
    let pieces = deltas.len() - 1;
    assert_eq!(pieces, 8, "one piece per word, its spaces kept");
    assert_eq!(usage["usage"]["completion_tokens"], pieces);
    assert_eq!(deltas.last().unwrap()["choices"][0]["finish_reason"], "stop");
    let whole = post_json(&server, "/v1/chat/completions", &chat_body(&image, ""));
    let reply = whole.json();
    assert_eq!(reply["object"], "chat.completion");
    assert_eq!(reply["choices"][0]["message"]["content"], reference);
    assert_eq!(reply["choices"][0]["message"]["role"], "assistant");
    assert_eq!(reply["usage"]["completion_tokens"], 8);
    // Another question: a generated answer, the same every time, capped by max_completion_tokens.
    let other = chat_body(&image, "").replace("red kettle", "blue kettle").replace(r#""max_tokens":1024"#, r#""max_completion_tokens":2"#);
    let first = post_json(&server, "/v1/chat/completions", &other).json();
    assert_eq!(first["choices"][0]["message"]["content"], post_json(&server, "/v1/chat/completions", &other).json()["choices"][0]["message"]["content"]);
    assert_eq!(first["usage"]["completion_tokens"], 2);
    assert_eq!(first["choices"][0]["finish_reason"], "length");
    let plain = post_json(&server, "/v1/chat/completions", r#"{"messages":[{"role":"user","content":"Title: red kettle\nAnswer as JSON."}]}"#).json();
    assert_eq!(plain["choices"][0]["message"]["content"], reference, "string content keys as its one text part");
}

#[test]
fn a_malformed_image_or_message_is_a_400_naming_the_message_and_part() {
    let server = stand_in(StandInOptions::default());
    for (url, says) in [
        ("data:image/png;base64,%%%not-base64", "messages[1].content[1]: the data: URI's base64 does not decode"),
        ("https://example.com/kettle.jpg", "messages[1].content[1]: the stand-in does not fetch images"),
        ("data:image/png,rawbytes", "is not base64"),
        ("data:text/plain;base64,aGVsbG8=", "media type is `text/plain`"),
        (&data_uri("jpeg", b"hello, not an image"), "is not a JPEG, PNG, GIF, BMP or WEBP file"),
    ] {
        let answer = post_json(&server, "/v1/chat/completions", &chat_body(url, ""));
        assert_eq!(answer.status, 400, "{url}");
        let message = answer.refusal();
        assert!(message.contains(says), "{url}: {message}");
    }
    for (body, says) in [
        (r#"{"messages":[{"role":"robot","content":"x"}]}"#, "messages[0].role is `robot`"),
        (r#"{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}"#, "messages[0].content[0]: the stand-in reads text and image_url parts"),
        (r#"{"messages":[{"role":"user","content":"x"}],"max_completion_tokens":0}"#, "max_completion_tokens must be at least 1"),
        (r#"{"messages":[]}"#, "messages is empty"),
        (r#"{"model":"m"}"#, "missing field `messages`"),
    ] {
        let answer = post_json(&server, "/v1/chat/completions", body);
        assert_eq!(answer.status, 400, "{body}");
        assert!(answer.refusal().contains(says), "{body}: {:?}", answer.body);
    }
}

/// A 16 kHz WAV of `samples` (then `padding` zeros) as `format`.
fn wav(samples: &[i16], padding: usize, float: bool) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: if float { 32 } else { 16 },
        sample_format: if float { hound::SampleFormat::Float } else { hound::SampleFormat::Int },
    };
    let mut out = Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut out, spec).unwrap();
    for &s in samples.iter().chain(std::iter::repeat_n(&0, padding)) {
        if float { writer.write_sample(f32::from(s) / 32768.0).unwrap() } else { writer.write_sample(s).unwrap() }
    }
    writer.finalize().unwrap();
    out.into_inner()
}

const BOUNDARY: &str = "------------------------d74496d66958873e";

/// A multipart body as `curl -F file=@clip.wav -F model=... -F key=value` writes it.
fn multipart(file: (&str, &[u8]), fields: &[(&str, &str)]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend(format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{}\"\r\nContent-Type: audio/wav\r\n\r\n", file.0).bytes());
    body.extend_from_slice(file.1);
    for (name, value) in fields {
        body.extend(format!("\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}").bytes());
    }
    body.extend(format!("\r\n--{BOUNDARY}--\r\n").bytes());
    body
}

fn transcribe(server: &StandIn, file: (&str, &[u8]), fields: &[(&str, &str)]) -> Answer {
    send(server, "POST", "/v1/audio/transcriptions", &format!("multipart/form-data; boundary={BOUNDARY}"), multipart(file, fields))
}

#[test]
fn a_curl_multipart_transcription_of_a_padded_wav_gets_its_reference_streamed_or_whole() {
    let clip: Vec<i16> = (0..8000).map(|i| ((i * 37 % 2000) - 1000) as i16).collect();
    let reference = " mister quilter is the apostle of the middle classes";
    let server = stand_in(with_texts(audio_key(&clip), reference));
    let padded = wav(&clip, 480_000 - clip.len(), false);
    let streamed = transcribe(
        &server,
        ("clip.wav", &padded),
        &[("model", "openai/whisper-large-v3"), ("language", "en"), ("temperature", "0"), ("stream", "true"), ("stream_include_usage", "true"), ("response_format", "json")],
    );
    assert_eq!(streamed.status, 200, "{:?}", streamed.body);
    let chunks = streamed.chunks();
    let (usage, deltas) = chunks.split_last().unwrap();
    assert!(deltas.iter().all(|c| c["object"] == "transcription.chunk" && c["model"] == "openai/whisper-large-v3"));
    let text: String = deltas.iter().map(|c| c["choices"][0]["delta"]["content"].as_str().unwrap()).collect();
    assert_eq!(text, reference, "zero padding does not change the clip's key");
    assert_eq!(usage["usage"]["completion_tokens"], 9);
    assert_eq!(deltas[8]["choices"][0]["finish_reason"], "stop");
    let whole = transcribe(&server, ("clip.wav", &wav(&clip, 0, true)), &[("model", "whisper")]);
    assert_eq!(whole.json(), json!({ "text": reference, "usage": { "type": "duration", "seconds": 1 } }), "a float WAV of the same samples");
    let text = transcribe(&server, ("clip.wav", &padded), &[("response_format", "text")]);
    assert_eq!((text.content_type.as_str(), text.body.unwrap()), ("text/plain; charset=utf-8", reference.to_string()));
    let capped = transcribe(&server, ("clip.wav", &padded), &[("max_completion_tokens", "3")]).json();
    assert_eq!(capped["text"], " mister quilter is");
    let other = transcribe(&server, ("other.wav", &wav(&[5, 6, 7], 0, false)), &[]).json();
    assert!(other["text"].as_str().unwrap().starts_with(" t"), "an unknown clip: a generated answer: {other}");
}

#[test]
fn a_non_wav_upload_or_a_malformed_form_is_a_400_naming_what_is_wrong() {
    let server = stand_in(StandInOptions::default());
    let clip = wav(&[1, 2, 3], 0, false);
    let long = wav(&[7; 100], 0, false);
    let mut pcm24 = Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut pcm24, hound::WavSpec { channels: 1, sample_rate: 16_000, bits_per_sample: 24, sample_format: hound::SampleFormat::Int }).unwrap();
    writer.write_sample(1i32).unwrap();
    writer.finalize().unwrap();
    let pcm24 = pcm24.into_inner();
    for (file, fields, says) in [
        (("clip.mp3", &b"ID3\x04\0\0\0\0\0\x23TSSE"[..]), &[][..], "the file `clip.mp3` (14 bytes) is not a WAV file"),
        (("clip24.wav", &pcm24[..]), &[], "holds 24-bit Int samples"),
        (("cut.wav", &long[..60]), &[], "the file `cut.wav` (60 bytes) is a truncated or corrupt WAV file"),
        (("clip.wav", &clip[..]), &[("stream_include_usage", "true")], "only be defined when `stream=True`. (stream_include_usage)"),
        (("clip.wav", &clip[..]), &[("response_format", "srt")], "response_format `srt`"),
        (("clip.wav", &clip[..]), &[("temperature", "warm")], "temperature is `warm`, not a number"),
        (("clip.wav", &clip[..]), &[("stream", "maybe")], "stream is `maybe`, not a boolean"),
    ] {
        let answer = transcribe(&server, file, fields);
        assert_eq!(answer.status, 400, "{}", file.0);
        let message = answer.refusal();
        assert!(message.contains(says) && message.contains("/v1/audio/transcriptions"), "{}: {message}", file.0);
    }
    let no_file = send(
        &server,
        "POST",
        "/v1/audio/transcriptions",
        &format!("multipart/form-data; boundary={BOUNDARY}"),
        format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nw\r\n--{BOUNDARY}--\r\n").into_bytes(),
    );
    assert!(no_file.refusal().contains("no `file` part"));
    let not_multipart = post_json(&server, "/v1/audio/transcriptions", "{}");
    assert!(not_multipart.refusal().contains("multipart/form-data"));
}

#[test]
fn every_fault_reaches_every_generation_route() {
    let clip = wav(&[1, 2, 3], 0, false);
    let requests: [(&str, &str, Vec<u8>, bool); 5] = [
        ("/v1/completions", "application/json", br#"{"prompt": [[1], [2]], "max_tokens": 8}"#.to_vec(), false),
        ("/v1/completions", "application/json", br#"{"prompt": "t1", "max_tokens": 8, "stream": true}"#.to_vec(), true),
        ("/v1/chat/completions", "application/json", chat_body(&data_uri("png", &png()), r#","stream":true"#).into_bytes(), true),
        ("/v1/chat/completions", "application/json", chat_body(&data_uri("png", &png()), "").into_bytes(), false),
        ("/v1/audio/transcriptions", &format!("multipart/form-data; boundary={BOUNDARY}"), multipart(("clip.wav", &clip), &[("stream", "true")]), true),
    ];
    let with = |faults: Faults| stand_in(StandInOptions { faults, ..StandInOptions::default() });
    let (http_500, malformed, drop, stall) = (
        with(Faults { http_500_every: Some(1), ..Faults::default() }),
        with(Faults { malformed_every: Some(1), ..Faults::default() }),
        with(Faults { drop_every: Some(1), ..Faults::default() }),
        with(Faults { stall_every: Some(1), ..Faults::default() }),
    );
    for (path, content_type, body, streamed) in requests {
        let at = format!("{path} (streamed: {streamed})");
        let answer = send(&http_500, "POST", path, content_type, body.clone());
        assert_eq!(answer.status, 500, "{at}");
        assert!(answer.refusal().contains("injected failure"), "{at}");
        let answer = send(&malformed, "POST", path, content_type, body.clone());
        assert_eq!(answer.status, 200, "{at}");
        if streamed {
            let events = answer.events();
            let parses = |e: &String| serde_json::from_str::<Value>(e).is_ok();
            assert!(parses(&events[0]) && !events.iter().all(|e| parses(e) || e == "[DONE]"), "{at}: {events:?}");
        } else {
            assert!(serde_json::from_str::<Value>(answer.body.as_ref().unwrap()).is_err(), "{at}");
        }
        let answer = send(&drop, "POST", path, content_type, body.clone());
        assert!(answer.body.is_err(), "{at}: the connection breaks mid-answer: {:?}", answer.body);
        let answer = send(&stall, "POST", path, content_type, body);
        assert!(answer.body.as_ref().is_err_and(|e| e.contains("TimedOut") || e.contains("timed out")), "{at}: never ends: {:?}", answer.body);
    }
}

#[test]
fn models_health_version_and_unknown_routes() {
    let server = stand_in(StandInOptions { model: "served-name".into(), ..StandInOptions::default() });
    let models = send(&server, "GET", "/v1/models", "", Vec::new()).json();
    assert_eq!((models["object"].as_str(), models["data"][0]["id"].as_str()), (Some("list"), Some("served-name")));
    assert_eq!(send(&server, "GET", "/health", "", Vec::new()).status, 200);
    assert!(send(&server, "GET", "/version", "", Vec::new()).json()["version"].as_str().unwrap().starts_with("stand-in "));
    let missing = send(&server, "POST", "/generate", "application/json", b"{}".to_vec());
    assert_eq!(missing.status, 404);
    assert!(missing.refusal().contains("/v1/audio/transcriptions"), "the 404 lists the routes");
}

#[test]
fn keys_and_text_answers() {
    assert_eq!(chat_key(&["a", "b"]), "a\nb");
    assert_eq!(audio_key(&[1, -2, 0, 0]), audio_key(&[1, -2]));
    assert_ne!(audio_key(&[1, -2]), audio_key(&[1, -2, 0, 3]));
    // sha256 of the bytes 01 00 fe ff (Python: hashlib.sha256(bytes([1, 0, 0xfe, 0xff])).hexdigest()).
    assert_eq!(audio_key(&[1, -2]), "dd8b10d263a3a65c4bfc3680c3378c52be146db147b84f14629585cf287d424a");
    let o = with_texts("k".into(), "  two  words ");
    assert_eq!(o.text_answer("k", &[], 100), ["  two", "  words", " "]);
    assert_eq!(o.text_answer("k", &[], 1), ["  two"]);
    assert_eq!(o.text_answer("other", &[1], 2).len(), 2);
    let words = StandInOptions { vocab: 50, ..StandInOptions::default() };
    assert_eq!(words.encode_text("t3  t49\nt50 t03 hello"), [3, 49, words.encode_text("t50")[0], words.encode_text("t03")[0], words.encode_text("hello")[0]]);
}
