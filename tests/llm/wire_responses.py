"""Canned replies of the OpenAI Responses and Gemini APIs, checked by the SDKs' own models."""

from __future__ import annotations

from typing import Any

from google.genai import types as gtypes
from openai.types.responses import Response


def responses_reply(
    output: list[dict[str, Any]],
    *,
    usage: tuple[int, int] = (40, 12),
    cached: int = 0,
    reasoning: int = 0,
    status: str = "completed",
    incomplete: str | None = None,
    model: str = "gpt-5",
) -> dict[str, Any]:
    """A Responses API reply body; validated by the SDK's ``Response`` model."""
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "usage": {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": sum(usage),
            "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": reasoning},
        },
    }
    Response.model_validate(body)
    return body


def output_text(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoning_item(item_id: str, secret: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [{"type": "summary_text", "text": "thinking it over"}],
        "encrypted_content": secret,
    }


def gemini_reply(
    parts: list[dict[str, Any]],
    *,
    finish: str = "STOP",
    usage: tuple[int, int] = (30, 8),
    thoughts: int = 0,
    cached: int = 0,
    model: str = "gemini-2.5-flash",
) -> dict[str, Any]:
    """A generateContent reply body; validated by the SDK's response model."""
    body = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "thoughtsTokenCount": thoughts,
            "cachedContentTokenCount": cached,
            "totalTokenCount": sum(usage) + thoughts,
        },
        "modelVersion": model,
    }
    gtypes.GenerateContentResponse.model_validate(body)
    return body


def gemini_error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}
