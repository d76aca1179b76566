"""A toy agent instrumented by hand with the OpenTelemetry GenAI conventions:
one `invoke_agent` span, a `chat` span per model turn and an `execute_tool`
span per tool call, with the call's arguments as JSON."""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Tuple

from opentelemetry import trace

TOOLS: Dict[str, Callable[..., Any]] = {
    "get_weather": lambda city: f"18C in {city}",
    "convert_currency": lambda amount, to: round(amount * 1.1, 2),
    "format_answer": lambda lines: "\n".join(lines),
}


def run(question: str, plan: List[Tuple[str, Dict[str, Any]]], agent: str = "weather_agent") -> str:
    """Runs `plan` (the tool calls a model would ask for) under one agent span."""
    tracer = trace.get_tracer("toy-agent")
    with tracer.start_as_current_span(f"invoke_agent {agent}") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", agent)
        root.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]))
        answer = ""
        for i, (name, args) in enumerate(plan):
            with tracer.start_as_current_span("chat toy-model") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", "toy-model")
            with tracer.start_as_current_span(f"execute_tool {name}") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", name)
                span.set_attribute("gen_ai.tool.call.id", f"call_{i}")
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps(args))
                result = TOOLS[name](**args)
                span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
                answer = str(result)
        return answer
