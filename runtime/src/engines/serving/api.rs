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

use super::tokenizer::TokenizerError;
use mlperf_config::ServingApi;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

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

/// Decodes one SSE event's data into `out`. An error names what was wrong with the event.
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

    #[test]
    fn malformed_events_engine_errors_and_missing_ids_are_errors() {
        let mut out = Output::default();
        assert!(decode(ServingApi::TrtllmCompletions, "{not json", &mut out).unwrap_err().to_string().starts_with("malformed event"));
        assert!(decode(ServingApi::TrtllmCompletions, r#"{"error":{"message":"boom"}}"#, &mut out).unwrap_err().to_string().contains("boom"));
        assert!(decode(ServingApi::CompletionsTokenIds, r#"{"choices":[{"text":"a"}]}"#, &mut out).unwrap_err().to_string().contains("token_ids"));
    }
}
