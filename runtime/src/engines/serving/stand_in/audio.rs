//! `POST /v1/audio/transcriptions` as vLLM serves it (`speech_to_text/protocol.py`'s
//! `TranscriptionRequest`): a multipart/form-data upload (`file` and form fields, as curl, httpx and
//! the `openai` SDK send it), streamed as `transcription.chunk` events with a closing usage chunk,
//! or answered whole as `{"text": ...}` or plain text. The file is a WAV (16-bit PCM or 32-bit
//! float; other formats vLLM would decode are refused by name). The form is parsed by `multer`,
//! the parser axum uses, rather than by hand: boundaries, quoting and part headers are where
//! hand-written parsers go wrong, and clients differ in them.

use super::openai::{Head, TextAnswer, TextRoute, warn_ignored};
use super::{Events, Reply, State, bad_request, audio_key};
use bytes::Bytes;
use futures_util::stream;
use hyper::Response;
use std::collections::BTreeMap;
use std::convert::Infallible;

/// Whisper's decoder prompt: `<|startoftranscript|><|en|><|transcribe|><|notimestamps|>`.
const PROMPT_TOKENS: usize = 4;

/// Form fields vLLM's `TranscriptionRequest` reads, by type; others are ignored with a warning.
const TEXT_FIELDS: [&str; 7] = ["model", "language", "prompt", "response_format", "to_language", "hotwords", "timestamp_granularities[]"];
const FLOAT_FIELDS: [&str; 7] = ["temperature", "top_p", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "length_penalty"];
const INT_FIELDS: [&str; 4] = ["top_k", "seed", "max_completion_tokens", "n"];
const BOOL_FIELDS: [&str; 5] = ["stream", "stream_include_usage", "stream_continuous_usage_stats", "use_beam_search", "include_stop_str_in_output"];

/// An uploaded clip, mono.
struct Clip {
    samples: Vec<i16>,
    seconds: f64,
}

/// The form as sent: the file (its name and bytes) and every other field as text.
struct Form {
    file: Option<(String, Bytes)>,
    fields: BTreeMap<String, String>,
}

async fn read_form(content_type: &str, body: Bytes) -> Result<Form, String> {
    let boundary = multer::parse_boundary(content_type).map_err(|e| format!("the body must be multipart/form-data with a boundary (Content-Type: `{content_type}`): {e}"))?;
    let mut multipart = multer::Multipart::new(stream::once(async move { Ok::<Bytes, Infallible>(body) }), boundary);
    let mut form = Form { file: None, fields: BTreeMap::new() };
    while let Some(field) = multipart.next_field().await.map_err(|e| format!("the multipart body is malformed: {e}"))? {
        let name = field.name().unwrap_or_default().to_string();
        if name == "file" {
            let file_name = field.file_name().unwrap_or("file").to_string();
            let bytes = field.bytes().await.map_err(|e| format!("the `file` part is malformed: {e}"))?;
            form.file = Some((file_name, bytes));
        } else {
            let text = field.text().await.map_err(|e| format!("the `{name}` part is malformed: {e}"))?;
            form.fields.insert(name, text);
        }
    }
    Ok(form)
}

/// A form boolean as pydantic reads one.
fn boolean(name: &str, value: &str) -> Result<bool, String> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "on" | "t" | "true" | "y" | "yes" => Ok(true),
        "0" | "off" | "f" | "false" | "n" | "no" => Ok(false),
        _ => Err(format!("{name} is `{value}`, not a boolean")),
    }
}

/// Checks every field's type; the ones the stand-in acts on come back read.
struct Fields {
    model: Option<String>,
    stream: bool,
    include_usage: bool,
    text_format: bool,
    limit: u32,
}

fn fields(form: &Form) -> Result<Fields, String> {
    let f = &form.fields;
    for (name, value) in f {
        let n = name.as_str();
        if FLOAT_FIELDS.contains(&n) {
            value.trim().parse::<f64>().map_err(|_| format!("{name} is `{value}`, not a number"))?;
        } else if INT_FIELDS.contains(&n) {
            value.trim().parse::<i64>().map_err(|_| format!("{name} is `{value}`, not an integer"))?;
        } else if BOOL_FIELDS.contains(&n) {
            boolean(name, value)?;
        }
    }
    warn_ignored("/v1/audio/transcriptions", f.keys().filter(|k| ![&TEXT_FIELDS[..], &FLOAT_FIELDS, &INT_FIELDS, &BOOL_FIELDS].concat().contains(&k.as_str())));
    let flag = |name: &str| f.get(name).map_or(Ok(false), |v| boolean(name, v));
    let int = |name: &str| f.get(name).and_then(|v| v.trim().parse::<i64>().ok());
    let stream = flag("stream")?;
    for option in ["stream_include_usage", "stream_continuous_usage_stats"] {
        if flag(option)? && !stream {
            return Err(format!("Stream options can only be defined when `stream=True`. ({option})"));
        }
    }
    if let Some(n) = int("n").filter(|&n| n != 1) {
        return Err(format!("the stand-in answers one transcription; n = {n} (n)"));
    }
    let text_format = match f.get("response_format").map_or("json", String::as_str) {
        "json" => false,
        "text" => true,
        other => return Err(format!("response_format `{other}`: the stand-in answers json or text")),
    };
    let limit = match int("max_completion_tokens") {
        Some(n) if n < 1 => return Err(format!("max_completion_tokens must be at least 1, got {n}.")),
        Some(n) => u32::try_from(n).unwrap_or(u32::MAX),
        None => u32::MAX,
    };
    Ok(Fields { model: f.get("model").cloned(), stream, include_usage: flag("stream_include_usage")?, text_format, limit })
}

/// The samples of a WAV file, mixed down to mono; 32-bit float samples scaled to 16 bits.
fn wav(name: &str, bytes: &[u8]) -> Result<Clip, String> {
    let refuse = |what: String| format!("the file `{name}` ({} bytes) {what}; the stand-in reads WAV files of 16-bit PCM or 32-bit float samples", bytes.len());
    let reader = hound::WavReader::new(std::io::Cursor::new(bytes)).map_err(|e| refuse(format!("is not a WAV file ({e})")))?;
    let spec = reader.spec();
    let unreadable = |e: hound::Error| refuse(format!("is a truncated or corrupt WAV file ({e})"));
    let interleaved: Vec<i16> = match (spec.sample_format, spec.bits_per_sample) {
        (hound::SampleFormat::Int, 16) => reader.into_samples::<i16>().collect::<Result<_, _>>().map_err(unreadable)?,
        (hound::SampleFormat::Float, 32) => {
            reader.into_samples::<f32>().map(|s| s.map(|x| (x * 32768.0).round().clamp(-32768.0, 32767.0) as i16)).collect::<Result<_, _>>().map_err(unreadable)?
        }
        (format, bits) => return Err(refuse(format!("holds {bits}-bit {format:?} samples"))),
    };
    let channels = usize::from(spec.channels.max(1));
    let samples: Vec<i16> = interleaved.chunks(channels).map(|frame| (frame.iter().map(|&s| i32::from(s)).sum::<i32>() / frame.len() as i32) as i16).collect();
    Ok(Clip { seconds: samples.len() as f64 / f64::from(spec.sample_rate.max(1)), samples })
}

/// `POST /v1/audio/transcriptions`.
pub(super) async fn transcriptions(content_type: &str, body: Bytes, state: &State) -> Result<Reply, Response<super::Body>> {
    let options = &state.options;
    let refuse = |e: String| bad_request(format_args!("/v1/audio/transcriptions: {e}"));
    let form = read_form(content_type, body).await.map_err(refuse)?;
    let fields = fields(&form).map_err(refuse)?;
    let Some((name, bytes)) = &form.file else { return Err(refuse("the form has no `file` part (the audio to transcribe)".into())) };
    let clip = wav(name, bytes).map_err(refuse)?;
    let key = audio_key(&clip.samples);
    let pieces = options.text_answer(&key, &options.encode_text(&key), fields.limit);
    let answer = TextAnswer::new(Head::new("trsc", fields.model, options), TextRoute::Transcription, pieces, fields.limit, PROMPT_TOKENS, fields.include_usage);
    Ok(match (fields.stream, fields.text_format) {
        (true, _) => Reply::Stream(Box::new(answer)),
        (false, true) => Reply::Whole { steps: answer.steps(), content_type: "text/plain; charset=utf-8", body: answer.text() },
        (false, false) => Reply::Whole {
            steps: answer.steps(),
            content_type: "application/json",
            body: serde_json::json!({ "text": answer.text(), "usage": { "type": "duration", "seconds": clip.seconds.ceil() as u64 } }).to_string(),
        },
    })
}
