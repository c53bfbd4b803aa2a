//! The serving engines' HTTP dialects: where a request goes, what its body says, and how each
//! streamed event gives back the output token ids. Every dialect takes the prompt as token ids
//! (no tokenizer between the dataset and the engine) and decodes greedily up to the benchmark's
//! output limit.
//!
//! | api | route | prompt | output ids per event |
//! |---|---|---|---|
//! | completions-token-ids (vLLM, SGLang) | `/v1/completions` | `prompt: [ids]`, `return_token_ids` | `choices[0].token_ids` (new ids) |
//! | trtllm-completions (trtllm-serve) | `/v1/completions` | `prompt: [ids]`, `detokenize: false` | `choices[0].token_ids` (new ids) |
//! | sglang-generate (SGLang native) | `/generate` | `input_ids` | `output_ids`, with `meta_info.completion_tokens` |
//! | llama.cpp-completion | `/completion` | `prompt: [ids]`, `return_tokens` | `tokens` (new ids), `tokens_predicted` |
//! | completions-text (Dynamo) | `/v1/completions` | `prompt: [ids]` | `choices[0].text`, re-tokenized |
//!
//! Where an engine says how many tokens it produced (a usage chunk, `completion_tokens`,
//! `tokens_predicted`), the decoder checks the ids it collected against that count, so a stream
//! that lost events is an error rather than a short answer.
//!
//! Benchmarks that are not token prompts ([`Payload`]) use the OpenAI routes every engine serves,
//! whatever the configured dialect: chats with images at `/v1/chat/completions` and audio at
//! `/v1/audio/transcriptions`, both streamed as `choices[0].delta.content` with a final usage chunk.

use super::tokenizer::TokenizerError;
use base64::Engine as _;
use mlperf_config::ServingApi;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// The request URL of `api` at `endpoint` (a base URL as configured, e.g. `http://node1:8000/v1`;
/// the native routes live at the server's root, the OpenAI ones under `/v1`).
pub fn url(api: ServingApi, endpoint: &str) -> String {
    let root = endpoint.trim_end_matches('/').trim_end_matches("/v1");
    match api {
        ServingApi::CompletionsTokenIds | ServingApi::TrtllmCompletions | ServingApi::CompletionsText => format!("{root}/v1/completions"),
        ServingApi::SglangGenerate => format!("{root}/generate"),
        ServingApi::LlamaCppCompletion => format!("{root}/completion"),
    }
}

/// The server root of an endpoint (for `/health`).
pub fn root(endpoint: &str) -> &str {
    endpoint.trim_end_matches('/').trim_end_matches("/v1")
}

/// Where `api`'s engines say they are alive: the OpenAI dialects' `/v1/models` (vLLM,
/// trtllm-serve and Dynamo's frontend all serve it), the native servers' `/health`.
pub fn health_url(api: ServingApi, endpoint: &str) -> String {
    match api {
        ServingApi::CompletionsTokenIds | ServingApi::TrtllmCompletions | ServingApi::CompletionsText => format!("{}/v1/models", root(endpoint)),
        ServingApi::SglangGenerate | ServingApi::LlamaCppCompletion => format!("{}/health", root(endpoint)),
    }
}

/// What one sample asks of the engine.
#[derive(Debug, Clone)]
pub enum Payload {
    /// A prompt of token ids, in the configured dialect (the LLMs).
    Tokens(Arc<[i32]>),
    /// `POST /v1/chat/completions`: messages with text and image parts. No sampling fields: the
    /// server's generation config decides, as the vision-language reference leaves it.
    Chat(Arc<Chat>),
    /// `POST /v1/audio/transcriptions`: one clip uploaded as a WAV file, greedy.
    Transcription(Arc<Audio>),
}

/// A chat request's messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Chat {
    pub messages: Vec<ChatMessage>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatMessage {
    pub role: Role,
    pub content: Content,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
}

/// A message's content: a string, or a list of parts.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(Arc<str>),
    Parts(Vec<Part>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(Arc<str>),
    Image(Image),
}

/// An image as its file's bytes, sent as a `data:` URI: never decoded, resized or re-encoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    /// The format as PIL names it (`JPEG`, `PNG`): the URI's `data:image/<format>` is what the
    /// reference writes.
    pub format: &'static str,
    pub bytes: Arc<[u8]>,
}

/// A mono 16-bit PCM clip.
#[derive(Debug, Clone, PartialEq)]
pub struct Audio {
    pub samples: Arc<[i16]>,
    pub sample_rate: u32,
    /// Zero-padded up to this many samples when sent (whisper's rules: 30 s).
    pub pad_to: usize,
    /// The ISO 639-1 language the engine transcribes in (`en`).
    pub language: &'static str,
}

impl Payload {
    /// The request's URL at `endpoint` (a base URL as configured).
    pub fn url(&self, api: ServingApi, endpoint: &str) -> String {
        match self {
            Payload::Tokens(_) => url(api, endpoint),
            Payload::Chat(_) => format!("{}/v1/chat/completions", root(endpoint)),
            Payload::Transcription(_) => format!("{}/v1/audio/transcriptions", root(endpoint)),
        }
    }

    /// The request's content type and body.
    pub fn body(&self, api: ServingApi, model: &str, max_tokens: u32) -> (String, Vec<u8>) {
        match self {
            Payload::Tokens(ids) => ("application/json".into(), body(api, &Prompt { model, ids, max_tokens })),
            Payload::Chat(chat) => ("application/json".into(), chat_body(model, chat, max_tokens)),
            Payload::Transcription(audio) => transcription_body(model, audio, max_tokens),
        }
    }

    /// How the answer streams back.
    pub fn answer(&self, api: ServingApi) -> Answer {
        match self {
            Payload::Tokens(_) => Answer::Tokens(api),
            Payload::Chat(_) | Payload::Transcription(_) => Answer::Deltas,
        }
    }
}

/// How an answer's events are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Token ids (or text to re-tokenize) in the dialect's events.
    Tokens(ServingApi),
    /// Text in `choices[0].delta.content`, the engine's count in a final `usage`.
    Deltas,
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<MessageBody<'a>>,
    max_tokens: u32,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct MessageBody<'a> {
    role: Role,
    content: ContentBody<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum ContentBody<'a> {
    Text(&'a str),
    Parts(Vec<PartBody<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum PartBody<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Serialize)]
struct ImageUrl {
    url: String,
}

fn chat_body(model: &str, chat: &Chat, max_tokens: u32) -> Vec<u8> {
    let messages = chat
        .messages
        .iter()
        .map(|m| MessageBody {
            role: m.role,
            content: match &m.content {
                Content::Text(text) => ContentBody::Text(text),
                Content::Parts(parts) => ContentBody::Parts(
                    parts
                        .iter()
                        .map(|p| match p {
                            Part::Text(text) => PartBody::Text { text },
                            Part::Image(image) => PartBody::ImageUrl {
                                image_url: ImageUrl { url: format!("data:image/{};base64,{}", image.format, base64::engine::general_purpose::STANDARD.encode(&image.bytes)) },
                            },
                        })
                        .collect(),
                ),
            },
        })
        .collect();
    serde_json::to_vec(&ChatBody { model, messages, max_tokens, stream: true, stream_options: StreamOptions { include_usage: true } }).expect("request bodies are plain data")
}

/// Separates the parts of a transcription's form; a WAV's bytes could hold any string, so the body
/// is checked for it (and a longer one chosen) before use.
const BOUNDARY: &str = "mlperf-form-boundary-7d4a1c93e5f0";

/// A transcription request as `multipart/form-data` (RFC 7578), written here: its few fixed
/// fields and one file need no multipart crate.
fn transcription_body(model: &str, audio: &Audio, max_tokens: u32) -> (String, Vec<u8>) {
    let wav = wav(audio);
    let mut boundary = BOUNDARY.to_string();
    while wav.windows(boundary.len()).any(|w| w == boundary.as_bytes()) {
        boundary.push('x');
    }
    let fields = [
        ("model", model.to_string()),
        ("language", audio.language.to_string()),
        ("temperature", "0".into()),
        ("response_format", "json".into()),
        ("stream", "true".into()),
        ("stream_include_usage", "true".into()),
        ("max_completion_tokens", max_tokens.to_string()),
    ];
    let mut body = Vec::with_capacity(wav.len() + 1024);
    for (name, value) in fields {
        body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes());
    }
    body.extend_from_slice(format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\n").as_bytes());
    body.extend_from_slice(&wav);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The clip as a 16-bit PCM mono WAV file, zero-padded to `pad_to` samples.
pub fn wav(audio: &Audio) -> Vec<u8> {
    let n = audio.samples.len().max(audio.pad_to);
    let data = (n * 2) as u32;
    let mut out = Vec::with_capacity(44 + n * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&audio.sample_rate.to_le_bytes());
    out.extend_from_slice(&(audio.sample_rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data.to_le_bytes());
    for s in audio.samples.iter() {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out.resize(44 + n * 2, 0);
    out
}

/// What LoadGen gets for an answer: each family's choice.
#[derive(Debug, Clone, Copy)]
pub struct Respond {
    /// The bytes of the first-token report (token latencies on), from the answer so far.
    pub first: fn(&Output) -> Vec<u8>,
    /// The response bytes and `n_tokens` of a complete answer.
    pub complete: fn(&Output) -> (Vec<u8>, u64),
}

impl Respond {
    /// The language models: output ids as int32, one token each.
    pub const TOKEN_IDS: Respond =
        Respond { first: |out| out.ids.first().map_or_else(Vec::new, |id| id.to_le_bytes().to_vec()), complete: |out| (ids_bytes(&out.ids), out.ids.len() as u64) };
}

fn ids_bytes(ids: &[i32]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.to_le_bytes()).collect()
}

/// One generation request.
#[derive(Clone, Copy, Debug)]
pub struct Prompt<'a> {
    pub model: &'a str,
    pub ids: &'a [i32],
    pub max_tokens: u32,
}

#[derive(Serialize)]
struct CompletionsBody<'a> {
    model: &'a str,
    prompt: &'a [i32],
    max_tokens: u32,
    temperature: f32,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    return_token_ids: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detokenize: Option<bool>,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct SglangBody<'a> {
    input_ids: &'a [i32],
    sampling_params: SglangSampling,
    stream: bool,
}

#[derive(Serialize)]
struct SglangSampling {
    max_new_tokens: u32,
    temperature: f32,
}

#[derive(Serialize)]
struct LlamaCppBody<'a> {
    prompt: &'a [i32],
    n_predict: u32,
    temperature: f32,
    stream: bool,
    return_tokens: bool,
    cache_prompt: bool,
}

/// The JSON body of a streamed, greedy request in `api`'s dialect.
pub fn body(api: ServingApi, p: &Prompt) -> Vec<u8> {
    let completions = |return_token_ids, detokenize| CompletionsBody {
        model: p.model,
        prompt: p.ids,
        max_tokens: p.max_tokens,
        temperature: 0.0,
        stream: true,
        return_token_ids,
        detokenize,
        stream_options: StreamOptions { include_usage: true },
    };
    let json = match api {
        ServingApi::CompletionsTokenIds => serde_json::to_vec(&completions(Some(true), None)),
        ServingApi::TrtllmCompletions => serde_json::to_vec(&completions(None, Some(false))),
        ServingApi::CompletionsText => serde_json::to_vec(&completions(None, None)),
        ServingApi::SglangGenerate => {
            serde_json::to_vec(&SglangBody { input_ids: p.ids, sampling_params: SglangSampling { max_new_tokens: p.max_tokens, temperature: 0.0 }, stream: true })
        }
        ServingApi::LlamaCppCompletion => {
            serde_json::to_vec(&LlamaCppBody { prompt: p.ids, n_predict: p.max_tokens, temperature: 0.0, stream: true, return_tokens: true, cache_prompt: false })
        }
    };
    json.expect("request bodies are plain data")
}

/// What a stream has delivered so far.
#[derive(Debug, Default, Clone)]
pub struct Output {
    /// Output token ids in order (text dialects: empty until re-tokenized).
    pub ids: Vec<i32>,
    /// Streamed text (text dialects only).
    pub text: String,
    /// The engine's own count of output tokens, where it says one.
    pub engine_count: Option<u64>,
    /// The stand-in's time from receiving the request to sending its first token (benches
    /// subtract it from the client's TTFT to get what the client adds).
    pub server_ttft_us: Option<u64>,
}

impl Output {
    /// What every dialect's event may carry besides ids: an error the engine streams instead of
    /// tokens, and the stand-in's own time to first token.
    fn common(&mut self, error: Option<&serde_json::Value>, stand_in_ttft_us: Option<u64>) -> Result<(), ResponseError> {
        if let Some(e) = error {
            return Err(ResponseError::EngineError { error: clip(&e.to_string()) });
        }
        self.server_ttft_us = self.server_ttft_us.or(stand_in_ttft_us);
        Ok(())
    }
}

/// An answer the client cannot take: what was wrong with the engine's event or output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResponseError {
    /// `error` is the engine's error, clipped.
    #[error("the engine streamed an error: {error}")]
    EngineError { error: String },
    /// `event` is the event's data, clipped.
    #[error("malformed event ({reason}): {event}")]
    Malformed { reason: String, event: String },
    #[error("the event has no `choices[0].token_ids`: the engine ignored the request's token-id option (use a newer engine, or serving_api = \"completions-text\"): {event}")]
    NoTokenIds { event: String },
    #[error("the event has no `meta_info.completion_tokens`: {event}")]
    NoMetaInfo { event: String },
    #[error("`output_ids` has {got} ids, {have} received before, but `completion_tokens` says {count}")]
    OutputIds { got: usize, have: usize, count: usize },
    #[error("the engine reports {reported} output tokens but streamed {streamed}")]
    Count { reported: u64, streamed: usize },
    #[error("the engine streamed text without token ids, and no tokenizer is set to re-tokenize it (tokenizer_path)")]
    NoTokenizer,
    #[error("the stream ended without a `usage` chunk: the engine ignored `stream_options.include_usage` (or `stream_include_usage`), so the answer's token count is unknown")]
    NoUsage,
    /// Re-tokenizing streamed text.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// After one event: more to come, or the answer is complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    More,
    Done,
}

#[derive(Deserialize)]
struct CompletionChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<CompletionChoice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default)]
    stand_in_ttft_us: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionChoice<'a> {
    #[serde(default)]
    token_ids: Option<Vec<i32>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Usage {
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct SglangChunk {
    #[serde(default)]
    output_ids: Vec<i32>,
    #[serde(default)]
    meta_info: Option<SglangMeta>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default)]
    stand_in_ttft_us: Option<u64>,
}

#[derive(Deserialize)]
struct SglangMeta {
    completion_tokens: u64,
}

#[derive(Deserialize)]
struct LlamaCppChunk {
    #[serde(default)]
    tokens: Vec<i32>,
    #[serde(default)]
    stop: bool,
    #[serde(default)]
    tokens_predicted: Option<u64>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default)]
    stand_in_ttft_us: Option<u64>,
}

#[derive(Deserialize)]
struct DeltaChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<DeltaChoice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default)]
    stand_in_ttft_us: Option<u64>,
}

#[derive(Deserialize)]
struct DeltaChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
}

impl Answer {
    /// Decodes one SSE event's data into `out`. An error names what was wrong with the event.
    pub fn decode(self, data: &str, out: &mut Output) -> Result<Step, ResponseError> {
        match self {
            Answer::Tokens(api) => decode(api, data, out),
            Answer::Deltas => {
                let data = data.trim();
                if data == "[DONE]" {
                    return Ok(Step::Done);
                }
                let chunk: DeltaChunk = serde_json::from_str(data).map_err(|e| ResponseError::Malformed { reason: e.to_string(), event: clip(data) })?;
                out.common(chunk.error.as_ref(), chunk.stand_in_ttft_us)?;
                if let Some(text) = chunk.choices.first().and_then(|c| c.delta.as_ref()).and_then(|d| d.content.as_deref()) {
                    out.text.push_str(text);
                }
                if let Some(usage) = chunk.usage {
                    out.engine_count = Some(usage.completion_tokens);
                }
                Ok(Step::More)
            }
        }
    }

    /// Checks a finished answer: token ids against the engine's count; text answers must say
    /// how many tokens they took (LoadGen's `n_tokens`), which only the engine knows.
    pub fn check(self, out: &Output) -> Result<(), ResponseError> {
        match self {
            Answer::Tokens(_) => check_count(out),
            Answer::Deltas => match out.engine_count {
                Some(_) => Ok(()),
                None => Err(ResponseError::NoUsage),
            },
        }
    }
}

impl Output {
    /// Output tokens: the ids, or for text answers the engine's count.
    pub fn tokens(&self) -> u64 {
        if self.ids.is_empty() { self.engine_count.unwrap_or(0) } else { self.ids.len() as u64 }
    }
}

/// Decodes one SSE event's data of a token dialect into `out`. An error names what was wrong with
/// the event.
pub fn decode(api: ServingApi, data: &str, out: &mut Output) -> Result<Step, ResponseError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(Step::Done);
    }
    let malformed = |e: serde_json::Error| ResponseError::Malformed { reason: e.to_string(), event: clip(data) };
    match api {
        ServingApi::CompletionsTokenIds | ServingApi::TrtllmCompletions | ServingApi::CompletionsText => {
            let chunk: CompletionChunk = serde_json::from_str(data).map_err(malformed)?;
            out.common(chunk.error.as_ref(), chunk.stand_in_ttft_us)?;
            if let Some(choice) = chunk.choices.first() {
                match (api, &choice.token_ids, &choice.text) {
                    (ServingApi::CompletionsText, _, Some(text)) => out.text.push_str(text),
                    (ServingApi::CompletionsText, _, None) => {}
                    (_, Some(ids), _) => out.ids.extend_from_slice(ids),
                    (_, None, _) => {
                        return Err(ResponseError::NoTokenIds { event: clip(data) });
                    }
                }
            }
            if let Some(usage) = chunk.usage {
                out.engine_count = Some(usage.completion_tokens);
            }
            Ok(Step::More)
        }
        ServingApi::SglangGenerate => {
            let chunk: SglangChunk = serde_json::from_str(data).map_err(malformed)?;
            out.common(chunk.error.as_ref(), chunk.stand_in_ttft_us)?;
            let Some(meta) = chunk.meta_info else { return Err(ResponseError::NoMetaInfo { event: clip(data) }) };
            // SGLang streams all ids so far, or (with --stream-output) only the new ones: the
            // count says which.
            let count = meta.completion_tokens as usize;
            let have = out.ids.len();
            if chunk.output_ids.len() == count && count >= have {
                out.ids.extend_from_slice(&chunk.output_ids[have..]);
            } else if have + chunk.output_ids.len() == count {
                out.ids.extend_from_slice(&chunk.output_ids);
            } else {
                return Err(ResponseError::OutputIds { got: chunk.output_ids.len(), have, count });
            }
            out.engine_count = Some(meta.completion_tokens);
            Ok(Step::More)
        }
        ServingApi::LlamaCppCompletion => {
            let chunk: LlamaCppChunk = serde_json::from_str(data).map_err(malformed)?;
            out.common(chunk.error.as_ref(), chunk.stand_in_ttft_us)?;
            out.ids.extend_from_slice(&chunk.tokens);
            if chunk.tokens_predicted.is_some() && chunk.stop {
                out.engine_count = chunk.tokens_predicted;
            }
            Ok(if chunk.stop { Step::Done } else { Step::More })
        }
    }
}

/// Checks a finished output against the engine's own count of tokens.
pub fn check_count(out: &Output) -> Result<(), ResponseError> {
    match out.engine_count {
        Some(n) if n != out.ids.len() as u64 => Err(ResponseError::Count { reported: n, streamed: out.ids.len() }),
        _ => Ok(()),
    }
}

/// The start of a long text, for error messages.
pub fn clip(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_each_dialect_whatever_the_configured_base() {
        assert_eq!(url(ServingApi::CompletionsTokenIds, "http://a:1/v1"), "http://a:1/v1/completions");
        assert_eq!(url(ServingApi::TrtllmCompletions, "http://a:1/"), "http://a:1/v1/completions");
        assert_eq!(url(ServingApi::SglangGenerate, "http://a:1/v1/"), "http://a:1/generate");
        assert_eq!(url(ServingApi::LlamaCppCompletion, "http://a:1"), "http://a:1/completion");
        assert_eq!(root("http://a:1/v1"), "http://a:1");
    }

    #[test]
    fn bodies_carry_token_ids_greedy_decoding_and_the_output_limit() {
        let p = Prompt { model: "m", ids: &[1, 2], max_tokens: 7 };
        let v: serde_json::Value = serde_json::from_slice(&body(ServingApi::TrtllmCompletions, &p)).unwrap();
        assert_eq!((v["prompt"].clone(), v["max_tokens"].clone(), v["detokenize"].clone()), (serde_json::json!([1, 2]), 7.into(), false.into()));
        assert_eq!(v["temperature"], 0.0);
        assert!(v.get("return_token_ids").is_none(), "trtllm-serve refuses unknown fields");
        let v: serde_json::Value = serde_json::from_slice(&body(ServingApi::CompletionsTokenIds, &p)).unwrap();
        assert_eq!(v["return_token_ids"], true);
        let v: serde_json::Value = serde_json::from_slice(&body(ServingApi::SglangGenerate, &p)).unwrap();
        assert_eq!((v["input_ids"].clone(), v["sampling_params"]["max_new_tokens"].clone()), (serde_json::json!([1, 2]), 7.into()));
        let v: serde_json::Value = serde_json::from_slice(&body(ServingApi::LlamaCppCompletion, &p)).unwrap();
        assert_eq!((v["n_predict"].clone(), v["return_tokens"].clone()), (7.into(), true.into()));
    }

    #[test]
    fn each_dialect_yields_the_ids_and_checks_the_engines_count() {
        let mut out = Output::default();
        let api = ServingApi::CompletionsTokenIds;
        assert_eq!(decode(api, r#"{"choices":[{"text":"a","token_ids":[5]}],"stand_in_ttft_us":40}"#, &mut out), Ok(Step::More));
        decode(api, r#"{"choices":[{"text":"b\"c","token_ids":[6,7]}]}"#, &mut out).unwrap();
        decode(api, r#"{"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":2}}"#, &mut out).unwrap();
        assert_eq!(decode(api, "[DONE]", &mut out), Ok(Step::Done));
        assert_eq!((out.ids.as_slice(), out.server_ttft_us), (&[5, 6, 7][..], Some(40)));
        check_count(&out).unwrap();
        out.engine_count = Some(4);
        assert!(check_count(&out).unwrap_err().to_string().contains("reports 4 output tokens but streamed 3"));

        // SGLang: cumulative ids (default) and incremental ids (--stream-output) both decode.
        let mut out = Output::default();
        decode(ServingApi::SglangGenerate, r#"{"output_ids":[1],"meta_info":{"completion_tokens":1}}"#, &mut out).unwrap();
        decode(ServingApi::SglangGenerate, r#"{"output_ids":[1,2,3],"meta_info":{"completion_tokens":3}}"#, &mut out).unwrap();
        decode(ServingApi::SglangGenerate, r#"{"output_ids":[4],"meta_info":{"completion_tokens":4}}"#, &mut out).unwrap();
        assert_eq!(out.ids, [1, 2, 3, 4]);
        assert!(decode(ServingApi::SglangGenerate, r#"{"output_ids":[9,9],"meta_info":{"completion_tokens":9}}"#, &mut out).is_err());

        let mut out = Output::default();
        assert_eq!(decode(ServingApi::LlamaCppCompletion, r#"{"content":"x","tokens":[8],"stop":false}"#, &mut out), Ok(Step::More));
        assert_eq!(decode(ServingApi::LlamaCppCompletion, r#"{"content":"","tokens":[],"stop":true,"tokens_predicted":1}"#, &mut out), Ok(Step::Done));
        assert_eq!((out.ids.as_slice(), out.engine_count), (&[8][..], Some(1)));
    }

    fn chat() -> Payload {
        let parts = vec![Part::Text("a \"product\"".into()), Part::Image(Image { format: "PNG", bytes: Arc::from(&b"\x89PNG"[..]) })];
        Payload::Chat(Arc::new(Chat {
            messages: vec![ChatMessage { role: Role::System, content: Content::Text("be brief".into()) }, ChatMessage { role: Role::User, content: Content::Parts(parts) }],
        }))
    }

    #[test]
    fn a_chat_goes_to_the_openai_route_with_its_image_as_a_data_uri_and_no_sampling_fields() {
        let payload = chat();
        assert_eq!(payload.url(ServingApi::SglangGenerate, "http://a:1/v1"), "http://a:1/v1/chat/completions");
        let (content_type, body) = payload.body(ServingApi::CompletionsTokenIds, "m", 150);
        assert_eq!(content_type, "application/json");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["messages"][0], serde_json::json!({ "role": "system", "content": "be brief" }));
        assert_eq!(v["messages"][1]["content"][0], serde_json::json!({ "type": "text", "text": "a \"product\"" }));
        assert_eq!(v["messages"][1]["content"][1], serde_json::json!({ "type": "image_url", "image_url": { "url": "data:image/PNG;base64,iVBORw==" } }));
        assert_eq!((v["max_tokens"].clone(), v["stream"].clone(), v["stream_options"]["include_usage"].clone()), (150.into(), true.into(), true.into()));
        for unset in ["temperature", "top_p", "top_k"] {
            assert!(v.get(unset).is_none(), "{unset} is the server's generation config's");
        }
    }

    #[test]
    fn a_transcription_uploads_a_wav_padded_to_its_length_as_a_form() {
        let audio = Audio { samples: Arc::from(&[1i16, -2, 3][..]), sample_rate: 16_000, pad_to: 5, language: "en" };
        let wav = wav(&audio);
        assert_eq!((&wav[..4], &wav[8..16], wav.len()), (&b"RIFF"[..], &b"WAVEfmt "[..], 44 + 10));
        assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 16_000);
        assert_eq!(&wav[44..], &[1, 0, 0xfe, 0xff, 3, 0, 0, 0, 0, 0]);
        let payload = Payload::Transcription(Arc::new(audio));
        assert_eq!(payload.url(ServingApi::CompletionsTokenIds, "http://a:1/v1/"), "http://a:1/v1/audio/transcriptions");
        let (content_type, body) = payload.body(ServingApi::CompletionsTokenIds, "whisper", 200);
        let boundary = content_type.strip_prefix("multipart/form-data; boundary=").unwrap();
        let text = String::from_utf8_lossy(&body);
        for field in [
            "name=\"model\"\r\n\r\nwhisper\r\n",
            "name=\"language\"\r\n\r\nen\r\n",
            "name=\"stream\"\r\n\r\ntrue\r\n",
            "name=\"stream_include_usage\"\r\n\r\ntrue\r\n",
            "name=\"temperature\"\r\n\r\n0\r\n",
        ] {
            assert!(text.contains(field), "{field:?} in {text}");
        }
        assert!(body.windows(wav.len()).any(|w| w == wav.as_slice()), "the file is the WAV, byte for byte");
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
    }

    #[test]
    fn text_answers_collect_their_deltas_and_need_the_engines_count() {
        let answer = chat().answer(ServingApi::CompletionsTokenIds);
        let mut out = Output::default();
        answer.decode(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#, &mut out).unwrap();
        answer.decode(r#"{"object":"transcription.chunk","choices":[{"delta":{"content":" Hello"}}]}"#, &mut out).unwrap();
        answer.decode(r#"{"choices":[{"delta":{"content":" world."},"finish_reason":"stop"}]}"#, &mut out).unwrap();
        assert_eq!(answer.check(&out), Err(ResponseError::NoUsage));
        answer.decode(r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}"#, &mut out).unwrap();
        assert_eq!(answer.decode("[DONE]", &mut out), Ok(Step::Done));
        assert_eq!((out.text.as_str(), out.tokens()), (" Hello world.", 4));
        answer.check(&out).unwrap();
        assert!(answer.decode(r#"{"error":{"message":"image too large"}}"#, &mut out).unwrap_err().to_string().contains("image too large"));
        assert!(answer.decode("<html>", &mut out).unwrap_err().to_string().starts_with("malformed event"));
    }

    #[test]
    fn malformed_events_engine_errors_and_missing_ids_are_errors() {
        let mut out = Output::default();
        assert!(decode(ServingApi::TrtllmCompletions, "{not json", &mut out).unwrap_err().to_string().starts_with("malformed event"));
        assert!(decode(ServingApi::TrtllmCompletions, r#"{"error":{"message":"boom"}}"#, &mut out).unwrap_err().to_string().contains("boom"));
        assert!(decode(ServingApi::CompletionsTokenIds, r#"{"choices":[{"text":"a"}]}"#, &mut out).unwrap_err().to_string().contains("token_ids"));
    }
}
