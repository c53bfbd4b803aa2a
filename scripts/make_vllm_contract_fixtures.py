#!/usr/bin/env python3
"""Contract fixtures of the serving client against vLLM's own definitions of its OpenAI API
(tests/fixtures/serving/vllm/, read by `engines::serving::contract_tests`).

1. Requests: the bodies our client sends, as `cargo test ... dump_request_bodies_for_the_contract_script`
   writes them (or `--bodies FILE`), each parsed the way vLLM's server parses it: JSON bodies by
   pydantic into vLLM's CompletionRequest / ChatCompletionRequest, the multipart transcription
   upload by FastAPI's form parsing into vLLM's TranscriptionRequest (the route's own
   `Annotated[TranscriptionRequest, Form()]`). Recorded per body: the model, the fields vLLM would
   ignore (none allowed), the sampling parameters vLLM derives (`to_sampling_params`), and for media
   what vLLM's own loaders decode (`MediaConnector.fetch_image` of each data URI; `load_audio` of
   the uploaded WAV at 16 kHz, compared with the samples we sent).
2. Responses: the SSE streams and non-streamed bodies vLLM's own serving code writes
   (`OpenAIServingCompletion.completion_stream_generator` and `request_output_to_completion_response`,
   `OpenAIServingChat.chat_completion_stream_generator`, `OpenAIServingTranscription.
   transcription_stream_generator`), driven by engine outputs made here (`vllm.outputs.RequestOutput`),
   with what a client must read back from each (`expected` in streams.json: text, token ids, the
   usage count), computed from those engine outputs, not from any client.

vLLM's serving classes are used without their engine: each instance is made with `object.__new__`
and given the settings a default `vllm serve` has (no forced usage, no system fingerprint, no
output logging, no reasoning or tool parser, response role "assistant"), and a decoder-only model
config (only `is_encoder_decoder` is read on these paths). For Whisper the model class's audio-token
count (prompt_tokens in usage) needs the HF processor; it is given as Whisper's feature extractor
computes it (hop length 160 at 16 kHz). Nothing inside vLLM is patched.

Usage (Python with vllm installed from PyPI; see PROVENANCE.md for the versions used):
    python3 scripts/make_vllm_contract_fixtures.py [--bodies bodies.json] [--out tests/fixtures/serving/vllm]
"""
import argparse
import asyncio
import base64
import importlib.metadata
import io
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL = "served-model"
CREATED = 1_790_000_000


def our_bodies(path):
    """Our client's bodies: from a file, or dumped by the Rust test."""
    if path is None:
        path = REPO / "target" / "contract-bodies.json"
        env = dict(os.environ, MLPERF_CONTRACT_BODIES=str(path))
        subprocess.run(
            ["cargo", "test", "--release", "-p", "mlperf-runtime", "--lib", "dump_request_bodies_for_the_contract_script", "--", "--ignored"],
            cwd=REPO, env=env, check=True,
        )
    return json.loads(Path(path).read_text())


MAX_MODEL_LEN = 4096


def prompt_length(request):
    """Chat prompts are rendered by the chat template first: counted as 0 here."""
    prompt = getattr(request, "prompt", None)
    return len(prompt) if isinstance(prompt, list) else 0


def ignored_fields(model_cls, data):
    """The keys vLLM's OpenAIBaseModel would log as ignored (its own computation)."""
    names = set()
    for name, field in model_cls.model_fields.items():
        names.add(name)
        if field.alias:
            names.add(field.alias)
    return sorted(set(data) - names)


def deprecated_fields(model_cls, data):
    """The keys vLLM still reads but has marked deprecated (pydantic's `deprecated=`)."""
    return sorted(k for k, f in model_cls.model_fields.items() if f.deprecated and (k in data or f.alias in data))


def sampling(params):
    return {
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k,
        "max_tokens": params.max_tokens,
        "min_tokens": params.min_tokens,
        "n": params.n,
        "output_kind": params.output_kind.name,
    }


def check_json_body(case):
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest
    from vllm.multimodal.media.connector import MediaConnector

    from vllm.entrypoints.serve.utils.api_utils import get_max_tokens

    data = json.loads(case["body"])
    model_cls = {"/v1/completions": CompletionRequest, "/v1/chat/completions": ChatCompletionRequest}[case["route"]]
    request = model_cls.model_validate(data)
    verdict = {
        "model": model_cls.__name__,
        "ignored_fields": ignored_fields(model_cls, data),
        "deprecated_fields": deprecated_fields(model_cls, data),
        "stream": request.stream,
        "include_usage": bool(request.stream_options and request.stream_options.include_usage),
        # The server's generation config has no defaults here: what the request alone decides,
        # the output limit as the route computes it (a 4096-token context).
        "sampling": sampling(request.to_sampling_params(get_max_tokens(MAX_MODEL_LEN, request.max_tokens, prompt_length(request), {}), {})),
    }
    if model_cls is CompletionRequest:
        verdict["return_token_ids"] = bool(request.return_token_ids)
        verdict["prompt_is_token_ids"] = isinstance(request.prompt, list) and all(isinstance(t, int) for t in request.prompt)
    else:
        images = []
        for message in data["messages"]:
            for part in message["content"] if isinstance(message["content"], list) else []:
                if part["type"] == "image_url":
                    image = MediaConnector().fetch_image(part["image_url"]["url"])
                    images.append({"mode": image.mode, "size": list(image.size)})
        verdict["images"] = images
        verdict["roles"] = [m["role"] for m in data["messages"]]
    return verdict


def check_transcription(case):
    """Posts our exact multipart bytes through FastAPI's form parsing into vLLM's model."""
    import numpy as np
    from typing import Annotated

    from fastapi import FastAPI, Form
    from fastapi.testclient import TestClient
    from vllm.entrypoints.speech_to_text.base import serving as stt_serving
    from vllm.entrypoints.serve.utils.api_utils import get_max_tokens
    from vllm.entrypoints.speech_to_text.transcription.protocol import TranscriptionRequest

    app = FastAPI()
    seen = {}

    @app.post("/v1/audio/transcriptions")
    async def transcriptions(request: Annotated[TranscriptionRequest, Form()]):
        seen["request"] = request
        seen["audio"] = await request.file.read()
        return {}

    body = base64.b64decode(case["body_base64"])
    answer = TestClient(app).post(case["route"], content=body, headers={"content-type": case["content_type"]})
    if answer.status_code != 200:
        raise SystemExit(f"{case['name']}: vLLM's form parsing refused our body: {answer.status_code} {answer.text}")
    request = seen["request"]
    samples, rate = stt_serving.load_audio(io.BytesIO(seen["audio"]), sr=16000, mono=True)
    sent = np.asarray(case["samples"], dtype=np.float32) / 32768.0
    form_keys = sorted(request.model_dump(exclude_unset=True).keys() - {"file"})
    return {
        "model": "TranscriptionRequest",
        "ignored_fields": ignored_fields(TranscriptionRequest, {k: None for k in form_keys}),
        "deprecated_fields": deprecated_fields(TranscriptionRequest, form_keys),
        "fields": {k: getattr(request, k) for k in form_keys},
        "file_name": request.file.filename,
        "file_content_type": request.file.content_type,
        "stream": request.stream,
        "include_usage": request.stream_include_usage,
        # The output limit as the route computes it for Whisper (448 decoder positions).
        "sampling": sampling(request.to_sampling_params(get_max_tokens(448, request.max_completion_tokens, 0, {}), {})),
        "audio": {
            "sample_rate": int(rate),
            "samples": int(len(samples)),
            # vLLM decodes our 16-bit PCM to float32; equal to ours / 32768 up to float rounding.
            "max_abs_difference": float(np.max(np.abs(samples[: len(sent)] - sent))) if len(sent) else 0.0,
            "padding_is_zero": bool(np.all(samples[len(sent):] == 0)),
        },
    }


def sglang_verdict(case):
    """The same body as SGLang's server parses it: its pydantic OpenAI models, its native
    /generate dataclass and sampling parameters, its transcription route's declared form fields."""
    import re
    from sglang.srt.entrypoints.openai import protocol as sgl

    route = case["route"]
    if route in ("/v1/completions", "/v1/chat/completions"):
        data = json.loads(case["body"])
        model_cls = sgl.CompletionRequest if route == "/v1/completions" else sgl.ChatCompletionRequest
        request = model_cls.model_validate(data)
        return {"model": model_cls.__name__, "ignored_fields": ignored_fields(model_cls, data), "stream": request.stream,
                "include_usage": bool(request.stream_options and request.stream_options.include_usage),
                "temperature": request.temperature, "max_tokens": request.max_tokens,
                "return_token_ids": getattr(request, "return_token_ids", None) if route == "/v1/completions" else None}
    if route == "/generate":
        from sglang.srt.managers.io_struct import GenerateReqInput
        from sglang.srt.sampling.sampling_params import SamplingParams

        data = json.loads(case["body"])
        request = GenerateReqInput(**data)  # a TypeError names any field it does not know
        params = SamplingParams(**request.sampling_params)
        params.verify(32000)
        # SGLang keeps greedy decoding as temperature 1 with top_k 1.
        return {"model": "GenerateReqInput", "ignored_fields": [], "stream": request.stream, "input_ids": request.input_ids == data["input_ids"],
                "temperature": 0.0 if params.top_k == 1 else params.temperature, "max_tokens": params.max_new_tokens}
    # The transcription route's own signature, on an app without an engine: FastAPI parses our
    # multipart bytes into its declared form fields; any other field is silently dropped.
    import inspect
    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from sglang.srt.entrypoints import http_server

    route_fn = http_server.openai_v1_audio_transcriptions
    parsed = {}

    async def record(**kwargs):
        parsed.update({k: v for k, v in kwargs.items() if k not in ("raw_request", "file")})
        parsed["audio_bytes"] = len(await kwargs["file"].read())
        return {}

    record.__signature__ = inspect.signature(route_fn)
    app = FastAPI()
    app.post(route)(record)
    answer = TestClient(app).post(route, content=base64.b64decode(case["body_base64"]), headers={"content-type": case["content_type"]})
    if answer.status_code != 200:
        raise SystemExit(f"{case['name']}: SGLang's form parsing refused our body: {answer.status_code} {answer.text}")
    declared = {getattr(p.default, "alias", None) or n for n, p in inspect.signature(route_fn).parameters.items()}
    sent = set(re.findall(r'; name="([^"]+)"', base64.b64decode(case["body_base64"]).decode("latin-1")))
    return {"model": "openai_v1_audio_transcriptions (form fields)", "ignored_fields": sorted(sent - declared),
            "stream": parsed["stream"], "temperature": parsed["temperature"], "language": parsed["language"], "audio_bytes": parsed["audio_bytes"]}


def serving(cls, **extra):
    """A vLLM serving object without an engine, with a default `vllm serve`'s settings."""
    s = object.__new__(cls)
    settings = dict(
        enable_force_include_usage=False, system_fingerprint=None, enable_log_outputs=False, request_logger=None,
        enable_prompt_tokens_details=False, enable_per_request_metrics=False, enable_log_deltas=False,
        model_config=types.SimpleNamespace(is_encoder_decoder=False), parser_cls=None, enable_auto_tools=False,
        response_role="assistant", _include_reasoning_tokens_details=False,
    )
    for k, v in {**settings, **extra}.items():
        setattr(s, k, v)
    return s


# What the "engine" generates: (token id, the text vLLM's detokenizer releases with it). A token
# whose text is held back (the first half of a multi-byte character) releases "" and the next one
# both halves; one id is past 2^15 and one past 2^16.
TOKENS = [(450, " The"), (13, " caf"), (30259, ""), (29948, "é"), (70000, " costs"), (29871, " 3"), (29889, "."), (29945, "5"), (2, "")]
PROMPT_IDS = [1, 15043, 3186]


def outputs(tokens, prompt_ids, finish="length"):
    from vllm.outputs import CompletionOutput, RequestOutput

    for k, (token, text) in enumerate(tokens):
        last = k == len(tokens) - 1
        yield RequestOutput(
            request_id="engine-1", prompt=None, prompt_token_ids=prompt_ids, prompt_logprobs=None,
            outputs=[CompletionOutput(index=0, text=text, token_ids=[token], cumulative_logprob=None, logprobs=None,
                                      finish_reason=finish if last else None)],
            finished=last,
        )


async def collect(generator):
    return "".join([chunk async for chunk in generator])


def expected(tokens, with_ids):
    return {"text": "".join(t for _, t in tokens), "token_ids": [i for i, _ in tokens] if with_ids else None, "completion_tokens": len(tokens)}


def completion_streams():
    from vllm.entrypoints.generate.base.protocol import RequestResponseMetadata
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion

    s = serving(OpenAIServingCompletion)
    streams = {}
    for name, with_ids in (("completions-token-ids", True), ("completions-text", False)):
        request = CompletionRequest.model_validate({
            "model": MODEL, "prompt": PROMPT_IDS, "max_tokens": len(TOKENS), "temperature": 0.0, "stream": True,
            "stream_options": {"include_usage": True}, **({"return_token_ids": True} if with_ids else {}),
        })

        async def results():
            for res in outputs(TOKENS, PROMPT_IDS):
                yield 0, res

        sse = asyncio.run(collect(s.completion_stream_generator(
            request, [{"prompt_token_ids": PROMPT_IDS}], results(), "cmpl-contract", CREATED, MODEL, 1, None,
            RequestResponseMetadata(request_id="cmpl-contract"))))
        streams[name] = {"route": "/v1/completions", "sse": sse, "expected": expected(TOKENS, with_ids)}
    return streams


def completion_batch_response():
    """The non-streamed answer to a batch of two token-id prompts (what the reference llama2-70b
    client's Offline SUT sends and reads)."""
    from vllm.entrypoints.generate.base.protocol import RequestResponseMetadata
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest
    from vllm.entrypoints.openai.completion.serving import OpenAIServingCompletion
    from vllm.outputs import CompletionOutput, RequestOutput

    s = serving(OpenAIServingCompletion)
    prompts = [PROMPT_IDS, [1, 22172]]
    request = CompletionRequest.model_validate({"model": MODEL, "prompt": prompts, "min_tokens": 1, "max_tokens": 1024})
    finals = [
        RequestOutput(request_id=f"engine-{k}", prompt=None, prompt_token_ids=p, prompt_logprobs=None, finished=True,
                      outputs=[CompletionOutput(index=0, text="".join(t for _, t in TOKENS[: 3 + k]), token_ids=[i for i, _ in TOKENS[: 3 + k]],
                                                cumulative_logprob=None, logprobs=None, finish_reason="stop")])
        for k, p in enumerate(prompts)
    ]
    response = s.request_output_to_completion_response(finals, request, "cmpl-batch", CREATED, MODEL, None, RequestResponseMetadata(request_id="cmpl-batch"))
    # As the route returns it: FastAPI's JSONResponse of model_dump().
    return {"route": "/v1/completions", "request": request.model_dump(exclude_unset=True), "body": json.loads(response.model_dump_json()),
            "expected": [f.outputs[0].text for f in finals]}


def chat_stream():
    from vllm.entrypoints.generate.base.protocol import RequestResponseMetadata
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.entrypoints.openai.chat_completion.serving import OpenAIServingChat

    s = serving(OpenAIServingChat)
    request = ChatCompletionRequest.model_validate({
        "model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"}]}],
        "max_tokens": len(TOKENS), "stream": True, "stream_options": {"include_usage": True},
    })

    async def results():
        for res in outputs(TOKENS, PROMPT_IDS):
            yield res

    sse = asyncio.run(collect(s.chat_completion_stream_generator(
        request, results(), "chatcmpl-contract", MODEL, [], None, RequestResponseMetadata(request_id="chatcmpl-contract"))))
    return {"route": "/v1/chat/completions", "sse": sse, "expected": expected(TOKENS, False)}


def transcription_stream():
    from vllm.entrypoints.generate.base.protocol import RequestResponseMetadata
    from vllm.entrypoints.speech_to_text.transcription.protocol import TranscriptionRequest
    from vllm.entrypoints.speech_to_text.transcription.serving import OpenAIServingTranscription
    from vllm.model_executor.models.whisper import WhisperForConditionalGeneration

    hop = 160  # Whisper's feature extractor: 10 ms hops at 16 kHz
    whisper = types.SimpleNamespace(get_num_audio_tokens=lambda duration_s, config, model_config: math.ceil(duration_s * 16000 / hop))
    s = serving(OpenAIServingTranscription, model_cls=whisper, asr_config=None,
                streaming_post_processor_cls=WhisperForConditionalGeneration.get_streaming_post_processor_cls())
    request = TranscriptionRequest.model_construct(model=MODEL, language="en", stream=True, stream_include_usage=True,
                                                   stream_continuous_usage_stats=False, temperature=0.0)
    words = [(50364, ""), (383, " Mister"), (7663, " Quilter"), (307, " is"), (50257, "")]

    async def results():
        for res in outputs(words, [50258, 50259, 50359, 50363], finish="stop"):
            yield res

    sse = asyncio.run(collect(s.transcription_stream_generator(
        request, [results()], "trsc-contract", RequestResponseMetadata(request_id="trsc-contract"), 30.0, " ")))
    return {"route": "/v1/audio/transcriptions", "sse": sse, "expected": expected(words, False)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bodies", help="our bodies as JSON (default: dumped by the Rust test)")
    ap.add_argument("--out", default=str(REPO / "tests/fixtures/serving/vllm"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    requests = []
    for case in our_bodies(args.bodies):
        verdicts = {"sglang": sglang_verdict(case)}
        if case["route"].startswith("/v1/"):
            verdicts["vllm"] = check_transcription(case) if "body_base64" in case else check_json_body(case)
            if verdicts["vllm"]["ignored_fields"]:
                raise SystemExit(f"{case['name']}: vLLM would ignore {verdicts['vllm']['ignored_fields']}")
        case = {k: v for k, v in case.items() if k != "samples"}
        requests.append({**case, **verdicts})
    (out / "requests.json").write_text(json.dumps(requests, indent=1, ensure_ascii=False) + "\n")

    streams = {**completion_streams(), "chat": chat_stream(), "transcription": transcription_stream()}
    (out / "streams.json").write_text(json.dumps(streams, indent=1, ensure_ascii=False) + "\n")
    (out / "responses.json").write_text(json.dumps({"completions-batch": completion_batch_response()}, indent=1, ensure_ascii=False) + "\n")

    versions = {p: importlib.metadata.version(p) for p in ("vllm", "sglang", "pydantic", "fastapi", "starlette", "torch", "numpy")}
    (out / "versions.json").write_text(json.dumps({"python": sys.version.split()[0], **versions}, indent=1) + "\n")
    print(f"wrote {out}: {len(requests)} requests, {len(streams)} streams; {versions}")


if __name__ == "__main__":
    main()
