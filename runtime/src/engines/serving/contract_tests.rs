//! Our requests and vLLM's answers against vLLM's own definitions of its OpenAI API: the fixtures
//! of `tests/fixtures/serving/vllm/` (`scripts/make_vllm_contract_fixtures.py`; versions and
//! commands in its PROVENANCE.md). `requests.json` holds the bodies this client sends, one per
//! payload and dialect that goes to vLLM, each as vLLM parsed it (its pydantic request models, its
//! FastAPI form parsing, its image and audio loaders); `streams.json` the SSE streams vLLM's own
//! serving code writes for engine outputs made by the script, with what the engine generated.
//!
//! When a body changes on purpose, the first test fails: run the script again (it dumps the bodies
//! through `dump_request_bodies_for_the_contract_script`) and commit the new fixtures.

use super::api::{Answer, Audio, Chat, ChatMessage, Content, Image, Output, Part, Payload, Role, Step};
use base64::Engine as _;
use futures_util::StreamExt;
use mlperf_config::ServingApi;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const MODEL: &str = "served-model";
const MAX_TOKENS: u32 = 7;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/serving/vllm")
}

fn fixture(name: &str) -> Value {
    let path = fixtures().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A 2x3 RGB PNG and a 3x2 JPEG (made with Pillow), as files: their bytes go out unchanged.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAFElEQVR4nGM8IRfFwMDAxMDAgKAAGIIBRiYtXYQAAAAASUVORK5CYII=";
const JPEG: &str = "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/wAARCAACAAMDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDl6KKKZ+jn/9k=";

/// The audio clip: full-scale samples both ways, zero-padded to 16 samples when sent.
const SAMPLES: [i16; 6] = [0, 1000, -1000, 32767, -32768, 5];

/// One request per payload and dialect this client sends to vLLM.
fn our_requests() -> Vec<(&'static str, ServingApi, Payload)> {
    let tokens = Payload::Tokens(Arc::from([1, 15043, 3186, 40000]));
    let image = |format, b64: &str| Part::Image(Image { format, bytes: base64::engine::general_purpose::STANDARD.decode(b64).unwrap().into() });
    let chat_text = Chat {
        messages: vec![
            ChatMessage { role: Role::System, content: Content::Text("You sort products into categories.".into()) },
            ChatMessage { role: Role::User, content: Content::Text("A \"red\" café chair, 3.5 kg".into()) },
        ],
    };
    let chat_images = Chat {
        messages: vec![ChatMessage {
            role: Role::User,
            content: Content::Parts(vec![Part::Text("Which category?".into()), image("PNG", PNG), image("JPEG", JPEG), Part::Text("Answer in JSON.".into())]),
        }],
    };
    let audio = Audio { samples: Arc::from(SAMPLES), sample_rate: 16_000, pad_to: 16, language: "en" };
    vec![
        ("completions-token-ids", ServingApi::CompletionsTokenIds, tokens.clone()),
        ("completions-text", ServingApi::CompletionsText, tokens.clone()),
        ("sglang-generate", ServingApi::SglangGenerate, tokens),
        ("chat-text", ServingApi::CompletionsTokenIds, Payload::Chat(Arc::new(chat_text))),
        ("chat-images", ServingApi::CompletionsTokenIds, Payload::Chat(Arc::new(chat_images))),
        ("transcription", ServingApi::CompletionsTokenIds, Payload::Transcription(Arc::new(audio))),
    ]
}

/// A request as the fixtures hold it: JSON bodies as text, multipart ones in base64 with the
/// samples the script compares vLLM's decoding with.
fn as_fixture(name: &str, api: ServingApi, payload: &Payload) -> Value {
    let url = payload.url(api, "http://engine:8000/v1");
    let route = url.trim_start_matches("http://engine:8000");
    let (content_type, body) = payload.body(api, MODEL, MAX_TOKENS);
    match payload {
        Payload::Transcription(audio) => json!({
            "name": name, "route": route, "content_type": content_type,
            "body_base64": base64::engine::general_purpose::STANDARD.encode(&body), "samples": audio.samples.as_ref(),
        }),
        _ => json!({ "name": name, "route": route, "content_type": content_type, "body": String::from_utf8(body).unwrap() }),
    }
}

#[test]
#[ignore = "writes our request bodies for scripts/make_vllm_contract_fixtures.py (MLPERF_CONTRACT_BODIES)"]
fn dump_request_bodies_for_the_contract_script() {
    let path = std::env::var("MLPERF_CONTRACT_BODIES").expect("MLPERF_CONTRACT_BODIES: where to write the bodies");
    let cases: Vec<Value> = our_requests().iter().map(|(name, api, payload)| as_fixture(name, *api, payload)).collect();
    std::fs::write(path, serde_json::to_string_pretty(&cases).unwrap()).unwrap();
}

#[test]
fn our_request_bodies_are_the_ones_vllm_parsed_as_meant() {
    let recorded = fixture("requests.json");
    let recorded = recorded.as_array().expect("a list of requests");
    let ours = our_requests();
    assert_eq!(recorded.len(), ours.len(), "one recorded request per case: run scripts/make_vllm_contract_fixtures.py");
    for ((name, api, payload), seen) in ours.iter().zip(recorded) {
        let now = as_fixture(name, *api, payload);
        for key in ["name", "route", "content_type", "body", "body_base64"] {
            assert_eq!(now.get(key), seen.get(key), "{name}: `{key}` differs from what vLLM parsed: run scripts/make_vllm_contract_fixtures.py and check its verdict");
        }
        check_sglang(name, payload, &seen["sglang"]);
        if *api == ServingApi::SglangGenerate {
            assert!(seen.get("vllm").is_none(), "{name}: SGLang's native route only");
            continue;
        }
        let vllm = &seen["vllm"];
        assert_eq!(vllm["ignored_fields"], json!([]), "{name}: vLLM ignores fields we send");
        // vLLM 0.33 marks chat's `max_tokens` deprecated for `max_completion_tokens`, and still reads it.
        let deprecated = if matches!(payload, Payload::Chat(_)) { json!(["max_tokens"]) } else { json!([]) };
        assert_eq!(vllm["deprecated_fields"], deprecated, "{name}: fields vLLM marks deprecated");
        assert_eq!((&vllm["stream"], &vllm["include_usage"]), (&json!(true), &json!(true)), "{name}: streamed with a usage event");
        assert_eq!(vllm["sampling"]["max_tokens"], MAX_TOKENS, "{name}: the output limit");
        assert_eq!(vllm["sampling"]["n"], 1, "{name}");
        match payload {
            Payload::Tokens(_) => {
                assert_eq!(vllm["model"], "CompletionRequest");
                assert_eq!(vllm["sampling"]["temperature"], 0.0, "{name}: greedy");
                assert_eq!(vllm["prompt_is_token_ids"], true, "{name}");
                assert_eq!(vllm["return_token_ids"], *api == ServingApi::CompletionsTokenIds, "{name}: token ids asked for only in that dialect");
            }
            Payload::Chat(chat) => {
                assert_eq!(vllm["model"], "ChatCompletionRequest");
                let roles: Vec<Value> = chat.messages.iter().map(|m| json!(m.role)).collect();
                assert_eq!(vllm["roles"], json!(roles), "{name}");
                // No sampling fields: vLLM falls back to the server's generation config (here
                // none, so the OpenAI default temperature of 1.0).
                assert_eq!(vllm["sampling"]["temperature"], 1.0, "{name}: no temperature sent");
                // The PNG is 2 wide and 3 high, the JPEG 3 by 2.
                let size = |p: &Part| match p {
                    Part::Image(image) => Some(if image.format == "PNG" { json!([2, 3]) } else { json!([3, 2]) }),
                    Part::Text(_) => None,
                };
                let sizes: Vec<Value> = chat
                    .messages
                    .iter()
                    .flat_map(|m| match &m.content {
                        Content::Parts(parts) => parts.iter().filter_map(size).collect(),
                        Content::Text(_) => Vec::new(),
                    })
                    .collect();
                let decoded: Vec<Value> = vllm["images"].as_array().unwrap().iter().map(|i| i["size"].clone()).collect();
                assert_eq!(decoded, sizes, "{name}: vLLM's MediaConnector decoded every data URI to the image sent");
            }
            Payload::Transcription(audio) => {
                assert_eq!(vllm["model"], "TranscriptionRequest");
                assert_eq!(vllm["sampling"]["temperature"], 0.0, "{name}: greedy");
                assert_eq!(vllm["fields"]["language"], audio.language, "{name}");
                assert_eq!((vllm["file_name"].as_str(), vllm["file_content_type"].as_str()), (Some("audio.wav"), Some("audio/wav")), "{name}");
                let decoded = &vllm["audio"];
                assert_eq!((decoded["sample_rate"].as_u64(), decoded["samples"].as_u64()), (Some(16_000), Some(audio.pad_to as u64)), "{name}: padded clip");
                assert!(decoded["max_abs_difference"].as_f64().unwrap() < 1e-6 && decoded["padding_is_zero"] == true, "{name}: vLLM's load_audio read back our samples: {decoded}");
            }
        }
    }
}

/// SGLang's reading of the same body. Its transcription route (0.5.23) declares no usage or
/// output-limit field and drops ours: its streamed transcriptions carry no usage, which the
/// client needs for `n_tokens` (`Answer::check`), so whisper cannot be served by it yet.
fn check_sglang(name: &str, payload: &Payload, sglang: &Value) {
    let dropped = if matches!(payload, Payload::Transcription(_)) { json!(["max_completion_tokens", "stream_include_usage"]) } else { json!([]) };
    assert_eq!(sglang["ignored_fields"], dropped, "{name}: fields SGLang drops");
    assert_eq!(sglang["stream"], true, "{name}: streamed");
    match payload {
        Payload::Chat(_) => assert_eq!(sglang["temperature"], Value::Null, "{name}: no temperature sent"),
        _ => assert_eq!(sglang["temperature"], 0.0, "{name}: greedy"),
    }
    if !matches!(payload, Payload::Transcription(_)) {
        assert_eq!(sglang["max_tokens"], MAX_TOKENS, "{name}: the output limit");
    }
}

/// The data of each SSE event, read with the client's own SSE reader.
fn events(sse: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let body = futures_util::stream::iter([Ok::<_, std::convert::Infallible>(bytes::Bytes::from(sse.to_string()))]);
        sse_stream::SseByteStream::new(body).filter_map(|e| async move { e.unwrap().data }).collect().await
    })
}

#[test]
fn vllms_own_streams_decode_to_what_its_engine_generated() {
    let streams = fixture("streams.json");
    let streams = streams.as_object().expect("streams by name");
    let answers = [
        ("completions-token-ids", Answer::Tokens(ServingApi::CompletionsTokenIds)),
        ("completions-text", Answer::Tokens(ServingApi::CompletionsText)),
        ("chat", Answer::Deltas),
        ("transcription", Answer::Deltas),
    ];
    assert_eq!(streams.len(), answers.len(), "every recorded stream is decoded here");
    for (name, answer) in answers {
        let stream = &streams[name];
        let expected = &stream["expected"];
        let mut out = Output::default();
        let mut steps = Vec::new();
        for data in events(stream["sse"].as_str().unwrap()) {
            steps.push(answer.decode(&data, &mut out).unwrap_or_else(|e| panic!("{name}: {e}")));
        }
        assert_eq!(steps.last(), Some(&Step::Done), "{name}: ends at [DONE]");
        // As the client does: a text dialect's ids come from re-tokenizing, so only the others
        // are checked against the engine's count.
        if !matches!(answer, Answer::Tokens(api) if api.streams_text()) {
            answer.check(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        assert_eq!(out.engine_count, expected["completion_tokens"].as_u64(), "{name}: the usage event's count");
        match expected["token_ids"].as_array() {
            Some(ids) => assert_eq!(json!(out.ids), json!(ids), "{name}: every token id, none twice"),
            None => assert_eq!(out.text, expected["text"].as_str().unwrap(), "{name}: the text, held-back characters included"),
        }
    }
}
