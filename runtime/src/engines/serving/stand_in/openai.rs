//! vLLM's OpenAI-compatible text routes as the stand-in serves them: `/v1/completions` (one prompt
//! or a batch, token ids or text, streamed or not, logprobs, token ids, usage) and
//! `/v1/chat/completions` (text and image parts). Fields are checked as vLLM's protocol models
//! check them (`vllm/entrypoints/openai/completion/protocol.py`, `chat_completion/protocol.py`):
//! a field of the wrong type or a value vLLM refuses is a 400 naming the field; a field it does
//! not know is ignored with a warning, as vLLM's `OpenAIBaseModel` (`extra="allow"`) does.

use super::{Body, Events, Reply, State, StandInOptions, bad_request, clip, push_event, response_id, unix_time};
use base64::Engine as _;
use hyper::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// vLLM's default `--max-logprobs`: a request for more is refused.
const MAX_LOGPROBS: i64 = 20;
/// vLLM's `max_tokens` when a completion request gives none (or null).
const DEFAULT_COMPLETION_TOKENS: i64 = 16;

/// `stream_options` (vLLM's `include_usage` defaults to true when the object is there).
#[derive(Deserialize)]
pub(super) struct StreamOptions {
    #[serde(default = "yes")]
    include_usage: Option<bool>,
    #[serde(default, rename = "continuous_usage_stats")]
    _continuous_usage_stats: Option<bool>,
}

fn yes() -> Option<bool> {
    Some(true)
}

fn one() -> i64 {
    1
}

/// Sampling fields vLLM accepts that change nothing in the stand-in's answer (it always answers
/// as greedy decoding would): typed, so a wrong type is refused as vLLM refuses it.
#[derive(Deserialize)]
pub(super) struct Sampling {
    #[serde(default, rename = "temperature")]
    _temperature: Option<f64>,
    #[serde(default, rename = "top_p")]
    _top_p: Option<f64>,
    #[serde(default, rename = "top_k")]
    _top_k: Option<i64>,
    #[serde(default, rename = "min_p")]
    _min_p: Option<f64>,
    #[serde(default, rename = "seed")]
    _seed: Option<i64>,
    #[serde(default)]
    stop: Option<Value>,
    #[serde(default, rename = "ignore_eos")]
    _ignore_eos: Option<bool>,
    #[serde(default, rename = "min_tokens")]
    _min_tokens: Option<i64>,
    #[serde(default, rename = "frequency_penalty")]
    _frequency_penalty: Option<f64>,
    #[serde(default, rename = "presence_penalty")]
    _presence_penalty: Option<f64>,
    #[serde(default, rename = "repetition_penalty")]
    _repetition_penalty: Option<f64>,
    #[serde(default, rename = "skip_special_tokens")]
    _skip_special_tokens: Option<bool>,
}

impl Sampling {
    /// What serde's types cannot say: `stop` is one string or a list of strings.
    fn check(&self) -> Result<(), String> {
        match &self.stop {
            None | Some(Value::Null | Value::String(_)) => Ok(()),
            Some(Value::Array(stops)) if stops.iter().all(Value::is_string) => Ok(()),
            Some(other) => Err(format!("stop is {}; it is a string or a list of strings", kind(other))),
        }
    }
}

/// Logs the fields a request carried that vLLM would ignore (it logs them too).
pub(super) fn warn_ignored<'a>(route: &str, fields: impl Iterator<Item = &'a String>) {
    let fields: Vec<&String> = fields.collect();
    if !fields.is_empty() {
        tracing::warn!("stand-in {route}: the following fields were present in the request but ignored: {fields:?}");
    }
}

/// `id`, `created` and `model` of every chunk and body of one response.
pub(super) struct Head {
    id: String,
    created: u64,
    model: String,
}

impl Head {
    pub(super) fn new(prefix: &str, model: Option<String>, options: &StandInOptions) -> Head {
        Head { id: response_id(prefix), created: unix_time(), model: model.unwrap_or_else(|| options.model.clone()) }
    }

    /// The chunk's leading fields, as JSON object members.
    fn members(&self, object: &str) -> String {
        format!(r#""id":{},"object":"{object}","created":{},"model":{}"#, json!(self.id), self.created, json!(self.model))
    }

    fn whole(&self, object: &str, rest: Map<String, Value>) -> String {
        let mut body = Map::new();
        body.insert("id".into(), json!(self.id));
        body.insert("object".into(), json!(object));
        body.insert("created".into(), json!(self.created));
        body.insert("model".into(), json!(self.model));
        body.extend(rest);
        Value::Object(body).to_string()
    }
}

fn usage(prompt: usize, completion: usize) -> Value {
    json!({ "prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion })
}

/// `max_tokens` (or `max_completion_tokens`) as vLLM checks it.
fn limit(field: &str, value: i64) -> Result<u32, String> {
    if value < 1 {
        return Err(format!("{field} must be at least 1, got {value}."));
    }
    Ok(u32::try_from(value).unwrap_or(u32::MAX))
}

/// The request refused at once: a 400 naming what is wrong.
type Refused = Response<Body>;

fn parse<'a, T: Deserialize<'a>>(route: &str, body: &'a [u8]) -> Result<T, Refused> {
    serde_json::from_slice(body).map_err(|e| bad_request(format_args!("{route}: the body is not a request vLLM accepts: {e}: {}", clip(&String::from_utf8_lossy(body)))))
}

fn streaming(stream: Option<bool>, options: &Option<StreamOptions>) -> Result<(bool, bool), String> {
    let stream = stream.unwrap_or(false);
    if options.is_some() && !stream {
        return Err("Stream options can only be defined when `stream=True`. (stream_options)".into());
    }
    Ok((stream, options.as_ref().is_some_and(|o| o.include_usage == Some(true))))
}

#[derive(Deserialize)]
struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    prompt: Option<Value>,
    #[serde(default)]
    max_tokens: Option<i64>,
    #[serde(default = "one")]
    n: i64,
    #[serde(default)]
    echo: Option<bool>,
    #[serde(default)]
    logprobs: Option<i64>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    return_token_ids: Option<bool>,
    /// trtllm-serve's: `false` returns token ids.
    #[serde(default)]
    detokenize: Option<bool>,
    #[serde(flatten)]
    sampling: Sampling,
    #[serde(flatten)]
    ignored: Map<String, Value>,
}

/// The prompts of a completion request: a string, a list of strings, a list of token ids or a
/// list of lists of token ids; text in the stand-in's own tokens.
fn prompts(prompt: Option<&Value>, options: &StandInOptions) -> Result<Vec<Vec<i32>>, String> {
    let empty = || "Either prompt or prompt_embeds must be provided and non-empty. (prompt)".to_string();
    let ids = |v: &Value, at: &str| -> Result<Vec<i32>, String> {
        let Value::Array(items) = v else { return Err(format!("prompt{at} is {}, not a list of token ids", kind(v))) };
        items
            .iter()
            .enumerate()
            .map(|(i, id)| id.as_u64().and_then(|id| i32::try_from(id).ok()).ok_or_else(|| format!("prompt{at}[{i}] is {}, not a token id (an integer, 0 or more)", clip(&id.to_string()))))
            .collect()
    };
    match prompt {
        None | Some(Value::Null) => Err(empty()),
        Some(Value::String(text)) if text.is_empty() => Err(empty()),
        Some(Value::String(text)) => Ok(vec![options.encode_text(text)]),
        Some(Value::Array(items)) if items.is_empty() => Err(empty()),
        Some(v @ Value::Array(items)) => match &items[0] {
            Value::Number(_) => Ok(vec![ids(v, "")?]),
            Value::String(_) => items
                .iter()
                .enumerate()
                .map(|(i, t)| t.as_str().map(|t| options.encode_text(t)).ok_or_else(|| format!("prompt[{i}] is {}; a list of prompts is all strings or all lists of token ids", kind(t))))
                .collect(),
            Value::Array(_) => items.iter().enumerate().map(|(i, p)| ids(p, &format!("[{i}]"))).collect(),
            other => Err(format!("prompt[0] is {}; a prompt is a string, a list of strings, a list of token ids or a list of lists of token ids", kind(other))),
        },
        Some(other) => Err(format!("prompt is {}; a prompt is a string, a list of strings, a list of token ids or a list of lists of token ids", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `POST /v1/completions`.
pub(super) fn completions(body: &[u8], state: &State) -> Result<Reply, Refused> {
    let options = &state.options;
    let request: CompletionRequest = parse("/v1/completions", body)?;
    warn_ignored("/v1/completions", request.ignored.keys());
    let checked = || -> Result<(Vec<Vec<i32>>, u32, bool, bool), String> {
        let (stream, include_usage) = streaming(request.stream, &request.stream_options)?;
        request.sampling.check()?;
        if request.n != 1 {
            return Err(format!("the stand-in answers one choice per prompt; n = {} (n)", request.n));
        }
        if request.echo == Some(true) {
            return Err("the stand-in does not echo prompts (echo = true)".into());
        }
        match request.logprobs {
            Some(n) if n < 0 && n != -1 => return Err(format!("`logprobs` must be a positive value or -1. (logprobs = {n})")),
            Some(n) if n == -1 || n > MAX_LOGPROBS => return Err(format!("Requested sample logprobs of {n}, which is greater than max allowed: {MAX_LOGPROBS}")),
            _ => {}
        }
        let limit = limit("max_tokens", request.max_tokens.unwrap_or(DEFAULT_COMPLETION_TOKENS))?;
        Ok((prompts(request.prompt.as_ref(), options)?, limit, stream, include_usage))
    };
    let (prompts, limit, stream, include_usage) = checked().map_err(|e| bad_request(format_args!("/v1/completions: {e}")))?;
    let offsets = request.logprobs.is_some();
    let choices = prompts
        .into_iter()
        .map(|prompt| {
            let ids = options.answer(&prompt, limit);
            let offsets = if offsets { ids.iter().scan(0, |at, id| Some(std::mem::replace(at, *at + spelled(*id).len()))).collect() } else { Vec::new() };
            Choice { prompt, ids, offsets }
        })
        .collect();
    let answer = Completions {
        head: Head::new("cmpl", request.model, options),
        choices,
        limit,
        token_ids: request.return_token_ids == Some(true) || request.detokenize == Some(false),
        logprobs: request.logprobs.map(|n| n.max(1) as u32),
        include_usage,
        vocab: options.vocab,
    };
    Ok(if stream { Reply::Stream(Box::new(answer)) } else { Reply::Whole { steps: answer.steps(), content_type: "application/json", body: answer.whole() } })
}

/// How the stand-in spells token `id` in text.
fn spelled(id: i32) -> String {
    format!(" t{id}")
}

struct Choice {
    prompt: Vec<i32>,
    ids: Vec<i32>,
    /// Each token's offset in the answer's text (only when logprobs are asked for).
    offsets: Vec<usize>,
}

struct Completions {
    head: Head,
    choices: Vec<Choice>,
    limit: u32,
    token_ids: bool,
    /// Top logprobs per token.
    logprobs: Option<u32>,
    include_usage: bool,
    vocab: u32,
}

impl Completions {
    fn finish(&self, choice: &Choice) -> &'static str {
        if choice.ids.len() >= self.limit as usize { "length" } else { "stop" }
    }

    /// vLLM's completion logprobs of tokens `range` of a choice: the stand-in is sure of each token
    /// (log 1 = 0) and lists the runners-up far below it; tokens are spelled as its vocabulary
    /// spells them (`t<k>`), as vLLM gives the tokenizer's own tokens.
    fn logprobs(&self, choice: &Choice, range: std::ops::Range<usize>) -> Value {
        let Some(top) = self.logprobs else { return Value::Null };
        let ids = &choice.ids[range.clone()];
        let tops: Vec<Value> = ids
            .iter()
            .map(|&id| {
                let runners = (1..top.min(self.vocab)).map(|j| (format!("t{}", (id as u32 + j) % self.vocab), json!(-10.0 * f64::from(j))));
                Value::Object(std::iter::once((format!("t{id}"), json!(0.0))).chain(runners).collect())
            })
            .collect();
        json!({
            "text_offset": &choice.offsets[range],
            "token_logprobs": vec![0.0; ids.len()],
            "tokens": ids.iter().map(|id| format!("t{id}")).collect::<Vec<_>>(),
            "top_logprobs": tops,
        })
    }

    fn usage(&self) -> Value {
        usage(self.choices.iter().map(|c| c.prompt.len()).sum(), self.choices.iter().map(|c| c.ids.len()).sum())
    }

    fn whole(&self) -> String {
        let choices: Vec<Value> = self
            .choices
            .iter()
            .enumerate()
            .map(|(index, c)| {
                let mut choice = json!({
                    "index": index,
                    "text": c.ids.iter().map(|&id| spelled(id)).collect::<String>(),
                    "logprobs": self.logprobs(c, 0..c.ids.len()),
                    "finish_reason": self.finish(c),
                    "stop_reason": null,
                });
                if self.token_ids {
                    choice["token_ids"] = json!(c.ids);
                    choice["prompt_token_ids"] = json!(c.prompt);
                }
                choice
            })
            .collect();
        let mut rest = Map::new();
        rest.insert("choices".into(), Value::Array(choices));
        rest.insert("usage".into(), self.usage());
        self.head.whole("text_completion", rest)
    }
}

impl Events for Completions {
    fn steps(&self) -> usize {
        self.choices.iter().map(|c| c.ids.len()).max().unwrap_or(0)
    }

    fn event(&self, k: usize, mut ttft_us: Option<u64>, out: &mut Vec<u8>) {
        let head = self.head.members("text_completion");
        if k == self.steps() {
            if self.include_usage {
                push_event(out, format!(r#"{{{head},"choices":[],"usage":{}}}"#, self.usage()));
            }
            push_event(out, "[DONE]".into());
            return;
        }
        for (index, c) in self.choices.iter().enumerate().filter(|(_, c)| k < c.ids.len()) {
            // Written directly rather than through serde_json's Value: at a thousand paced streams
            // the stand-in shares two cores with the client it measures.
            let id = c.ids[k];
            let finish = if k + 1 == c.ids.len() { format!(r#""{}""#, self.finish(c)) } else { "null".into() };
            let logprobs = self.logprobs(c, k..k + 1);
            let ids = match (self.token_ids, k) {
                (true, 0) => format!(r#","token_ids":[{id}],"prompt_token_ids":{}"#, json!(c.prompt)),
                (true, _) => format!(r#","token_ids":[{id}]"#),
                (false, _) => String::new(),
            };
            let ttft = ttft_us.take().map_or(String::new(), |us| format!(r#","stand_in_ttft_us":{us}"#));
            push_event(
                out,
                format!(r#"{{{head},"choices":[{{"index":{index},"text":" t{id}","logprobs":{logprobs},"finish_reason":{finish},"stop_reason":null{ids}}}]{ttft}}}"#),
            );
        }
    }
}

#[derive(Deserialize)]
struct ChatRequest {
    #[serde(default)]
    model: Option<String>,
    messages: Vec<Value>,
    #[serde(default)]
    max_tokens: Option<i64>,
    #[serde(default)]
    max_completion_tokens: Option<i64>,
    #[serde(default = "one")]
    n: i64,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    logprobs: Option<bool>,
    #[serde(flatten)]
    sampling: Sampling,
    #[serde(flatten)]
    ignored: Map<String, Value>,
}

/// What the stand-in reads of a conversation.
struct Conversation {
    /// Every message's text in the stand-in's tokens and a token per image (what seeds a
    /// generated answer, and the usage's prompt tokens).
    prompt: Vec<i32>,
    /// [`super::chat_key`] of the last user message.
    key: String,
}

const ROLES: [&str; 5] = ["system", "user", "assistant", "developer", "tool"];

fn conversation(messages: &[Value], options: &StandInOptions) -> Result<Conversation, String> {
    if messages.is_empty() {
        return Err("messages is empty".into());
    }
    let mut prompt = Vec::new();
    let mut key = None;
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).ok_or_else(|| format!("messages[{i}] has no role"))?;
        if !ROLES.contains(&role) {
            return Err(format!("messages[{i}].role is `{role}`, not one of {ROLES:?}"));
        }
        let mut texts: Vec<&str> = Vec::new();
        match message.get("content").unwrap_or(&Value::Null) {
            Value::Null if role == "assistant" => {}
            Value::String(text) => texts.push(text),
            Value::Array(parts) => {
                for (j, part) in parts.iter().enumerate() {
                    let at = format!("messages[{i}].content[{j}]");
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => texts.push(part.get("text").and_then(Value::as_str).ok_or_else(|| format!("{at}: a text part without a `text` string"))?),
                        Some("image_url") => {
                            let url = part.pointer("/image_url/url").and_then(Value::as_str).ok_or_else(|| format!("{at}: an image_url part without `image_url.url`"))?;
                            let bytes = image(url).map_err(|e| format!("{at}: {e}"))?;
                            // The image seeds the answer too: another image, another answer.
                            prompt.push((bytes.iter().fold(0u64, |h, &b| super::splitmix(h ^ u64::from(b))) % u64::from(options.vocab)) as i32);
                        }
                        Some(other) => return Err(format!("{at}: the stand-in reads text and image_url parts, not `{other}`")),
                        None => return Err(format!("{at}: a part without a `type`")),
                    }
                }
            }
            other => return Err(format!("messages[{i}].content is {}; content is a string or a list of parts", kind(other))),
        }
        texts.iter().for_each(|t| prompt.extend(options.encode_text(t)));
        if role == "user" {
            key = Some(super::chat_key(&texts));
        }
    }
    Ok(Conversation { prompt, key: key.unwrap_or_default() })
}

/// The bytes of an image given as a `data:image/<format>;base64,` URI, checked to be an image.
fn image(url: &str) -> Result<Vec<u8>, String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        return Err(format!("the stand-in does not fetch images ({}); send the image inline as a data:image/<format>;base64,... URI", clip(url)));
    }
    let Some(rest) = url.strip_prefix("data:") else { return Err(format!("the image URL `{}` is neither a data: URI nor an http(s) URL", clip(url))) };
    let Some((meta, data)) = rest.split_once(',') else { return Err("the data: URI has no `,` before its data".into()) };
    let Some(media) = meta.strip_suffix(";base64") else { return Err(format!("the data: URI (`data:{}`) is not base64; an image is data:image/<format>;base64,...", clip(meta))) };
    if !media.starts_with("image/") {
        return Err(format!("the data: URI's media type is `{media}`, not image/<format>"));
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).map_err(|e| format!("the data: URI's base64 does not decode: {e}"))?;
    const MAGIC: [&[u8]; 6] = [b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"GIF87a", b"GIF89a", b"BM", b"RIFF"];
    let webp = bytes.len() >= 12 && &bytes[8..12] == b"WEBP";
    if !MAGIC.iter().any(|m| bytes.starts_with(m)) || bytes.starts_with(b"RIFF") && !webp {
        let head: String = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
        return Err(format!("the image ({} bytes, beginning {head}) is not a JPEG, PNG, GIF, BMP or WEBP file", bytes.len()));
    }
    Ok(bytes)
}

/// `POST /v1/chat/completions`.
pub(super) fn chat(body: &[u8], state: &State) -> Result<Reply, Refused> {
    let options = &state.options;
    let request: ChatRequest = parse("/v1/chat/completions", body)?;
    warn_ignored("/v1/chat/completions", request.ignored.keys());
    let checked = || -> Result<(Conversation, u32, bool, bool), String> {
        let (stream, include_usage) = streaming(request.stream, &request.stream_options)?;
        request.sampling.check()?;
        if request.n != 1 {
            return Err(format!("the stand-in answers one choice; n = {} (n)", request.n));
        }
        if request.logprobs == Some(true) {
            return Err("the stand-in does not return chat logprobs (logprobs = true)".into());
        }
        let limit = match (request.max_completion_tokens, request.max_tokens) {
            (Some(n), _) => limit("max_completion_tokens", n)?,
            (None, Some(n)) => limit("max_tokens", n)?,
            (None, None) => u32::MAX,
        };
        Ok((conversation(&request.messages, options)?, limit, stream, include_usage))
    };
    let (conversation, limit, stream, include_usage) = checked().map_err(|e| bad_request(format_args!("/v1/chat/completions: {e}")))?;
    let pieces = options.text_answer(&conversation.key, &conversation.prompt, limit);
    let answer = TextAnswer::new(Head::new("chatcmpl", request.model, options), TextRoute::Chat, pieces, limit, conversation.prompt.len(), include_usage);
    Ok(if stream { Reply::Stream(Box::new(answer)) } else { Reply::Whole { steps: answer.steps(), content_type: "application/json", body: answer.chat_body() } })
}

/// The routes that answer in text pieces.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum TextRoute {
    Chat,
    Transcription,
}

/// A text answer (chat, transcription), one piece per token.
pub(super) struct TextAnswer {
    head: Head,
    route: TextRoute,
    pieces: Vec<String>,
    finish: &'static str,
    prompt_tokens: usize,
    include_usage: bool,
}

impl TextAnswer {
    pub(super) fn new(head: Head, route: TextRoute, pieces: Vec<String>, limit: u32, prompt_tokens: usize, include_usage: bool) -> TextAnswer {
        let finish = if pieces.len() >= limit as usize { "length" } else { "stop" };
        TextAnswer { head, route, pieces, finish, prompt_tokens, include_usage }
    }

    pub(super) fn text(&self) -> String {
        self.pieces.concat()
    }

    fn usage(&self) -> Value {
        usage(self.prompt_tokens, self.pieces.len())
    }

    fn chat_body(&self) -> String {
        let choice = json!({
            "index": 0,
            "message": { "role": "assistant", "content": self.text(), "tool_calls": [] },
            "logprobs": null,
            "finish_reason": self.finish,
            "stop_reason": null,
        });
        let mut rest = Map::new();
        rest.insert("choices".into(), json!([choice]));
        rest.insert("usage".into(), self.usage());
        self.head.whole("chat.completion", rest)
    }
}

impl Events for TextAnswer {
    fn steps(&self) -> usize {
        self.pieces.len()
    }

    fn event(&self, k: usize, ttft_us: Option<u64>, out: &mut Vec<u8>) {
        let object = match self.route {
            TextRoute::Chat => "chat.completion.chunk",
            TextRoute::Transcription => "transcription.chunk",
        };
        let head = self.head.members(object);
        if k == self.pieces.len() {
            if self.include_usage {
                push_event(out, format!(r#"{{{head},"choices":[],"usage":{}}}"#, self.usage()));
            }
            push_event(out, "[DONE]".into());
            return;
        }
        let ttft = ttft_us.map_or(String::new(), |us| format!(r#","stand_in_ttft_us":{us}"#));
        if k == 0 && self.route == TextRoute::Chat {
            // vLLM's first chat chunk says the role.
            push_event(out, format!(r#"{{{head},"choices":[{{"index":0,"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]{ttft}}}"#));
        }
        let content = json!(self.pieces[k]);
        let finish = if k + 1 == self.pieces.len() { format!(r#""{}""#, self.finish) } else { "null".into() };
        let ttft = if self.route == TextRoute::Chat { String::new() } else { ttft };
        push_event(
            out,
            match self.route {
                TextRoute::Chat => format!(r#"{{{head},"choices":[{{"index":0,"delta":{{"content":{content}}},"logprobs":null,"finish_reason":{finish}}}]}}"#),
                TextRoute::Transcription => format!(r#"{{{head},"choices":[{{"delta":{{"content":{content}}},"finish_reason":{finish},"stop_reason":null}}]{ttft}}}"#),
            },
        );
    }
}
