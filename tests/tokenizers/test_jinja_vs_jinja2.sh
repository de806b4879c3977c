#!/usr/bin/env bash
# test_jinja_vs_jinja2.sh — farthing's Jinja-subset interpreter against jinja2 itself, on random
# templates: each one a loop over the messages with nested if/elif/else, for, namespace sets,
# comments and {{ }} outputs drawn from the subset (loop variables, subscripts, slices, filters,
# methods, tests, and/or/not/in, conditional expressions), with random whitespace control
# (-, +), random text (spaces, tabs, newlines, \r\n) between tags, and three conversations.
# jinja2 renders them as transformers does (its _compile_jinja_template when importable, else
# the same sandbox with trim_blocks and lstrip_blocks). Every template jinja2 renders must
# render byte for byte the same; every one jinja2 refuses (an undefined value used, a type
# error) must be refused too. Then as many lexing templates: text with stray braces, \r\n,
# string literals with escapes, comments and tags with every whitespace-control sign, nested;
# and as many expression templates: random trees of literals, variables, operators, filters,
# methods, tests, subscripts, slices and conditionals, where Python's types and errors meet.
# Deterministic (seeded); prints how many rendered and failed alike.
# usage: test_jinja_vs_jinja2.sh JINJA_RENDER [COUNT]   (exit 77: no python3 with jinja2)
set -euo pipefail
RENDER="$1"
COUNT="${2:-1500}"
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
python3 -c "import jinja2" 2>/dev/null || { echo "SKIP: python3 has no jinja2 (pip install jinja2)"; exit 77; }
exec python3 - "$RENDER" "$COUNT" <<'EOF'
import json, random, subprocess, sys, warnings

warnings.simplefilter("ignore")  # jinja2's compiler warns about the generated subscripts of literals

try:
    from transformers.utils.chat_template_utils import _compile_jinja_template as compile_template
except Exception:  # the environment transformers builds, without transformers
    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    env.globals["raise_exception"] = raise_exception
    compile_template = env.from_string

render_binary, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(20261201)
TEXTS = ["", " ", "  ", "\n", "\n\n", "\t", " \n ", "x", "a b", "\n  ", "  \n", "<|im_end|>", "\u00e9", "\r\n", " \t\n"]
EXPRS = ["m.role", "m['content']", "m.content | trim", "loop.index", "loop.index0", "loop.first", "loop.last",
         "bos_token", "eos_token", "add_generation_prompt", "messages | length", "messages[0].role",
         "messages[-1]['content']", "messages[1:] | length", "(messages[::-1] | first).role", "'q' ~ loop.index",
         "m.content.strip()", "m.content.split(' ')", "m.content[1:3]", "m.content[::-1]", "ns.n", "x",
         "'a' if loop.first else 'b'", "m.role in ['user', 'tool']", "not loop.last", "loop.index0 % 2",
         "m.content | tojson", "[1, 'a', none]", "m", "none", "true", "m.content.startswith('H')",
         "m.content.replace('l', 'L')", "m.get('role')", "m.content | length", "'x' * 2", "loop.revindex",
         "m.content.lstrip()", "m.content.rstrip()", "m.content.split()", "m.role == 'user' and m.content",
         "m.role != 'user' or 'fallback'", "(m.content | trim | length) > 2", "messages[loop.index0 - 1].role",
         "m.content | default('d')", "messages | join('|')", "m.content is string", "x is defined", "m is mapping",
         "x.y", "m.content + 1", "raise_exception('no ' ~ m.role) if m.role == 'tool' else 'ok'"]
CONDS = ["loop.first", "loop.last", "m.role == 'user'", "m.role == 'assistant'", "m.content", "not m.content",
         "add_generation_prompt", "x is not defined", "loop.index0 % 2 == 0", "m.role in ['system', 'tool']",
         "ns.n > 1", "messages | length > 2", "m.content.endswith('!')"]
CONVERSATIONS = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi\tthere"},
     {"role": "assistant", "content": "Hello! \u00e9"}],
    [{"role": "user", "content": ""}, {"role": "assistant", "content": " a  b "}, {"role": "tool", "content": "{\"x\": 1}"}],
]


def tag(body):
    return ("{%" + rng.choice(["", "", "-", "+"]) + rng.choice([" ", "  "]) + body + rng.choice([" ", " ", "\n"]) +
            rng.choice(["", "", "-", "+"]) + "%}")


def text():
    return "".join(rng.choice(TEXTS) for _ in range(rng.randint(0, 3)))


def block(depth):
    out = text()
    for _ in range(rng.randint(1, 3)):
        c = rng.random()
        if c < 0.45 or depth > 3:
            out += "{{" + rng.choice(["", "-"]) + " " + rng.choice(EXPRS) + " " + rng.choice(["", "-"]) + "}}"
        elif c < 0.65:
            out += tag("if " + rng.choice(CONDS)) + block(depth + 1)
            if rng.random() < 0.4:
                out += tag("elif " + rng.choice(CONDS)) + block(depth + 1)
            if rng.random() < 0.5:
                out += tag("else") + block(depth + 1)
            out += tag("endif")
        elif c < 0.85:
            out += tag("for m in " + rng.choice(["messages", "messages[1:]", "messages[::-1]", "m.content", "[]"]))
            out += block(depth + 1) + tag("endfor")
        elif c < 0.93:
            out += tag("set ns.n = ns.n + 1")
        else:
            out += rng.choice(["{# c #}", "{#- c -#}", "\n  {# c #}\n"])
        out += text()
    return out


proc = subprocess.Popen([render_binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
rendered = refused = 0
mismatches = []
for i in range(count):
    template = "{% set ns = namespace(n=0) %}" + text() + tag("for m in messages") + block(1) + tag("endfor") + text()
    messages = rng.choice(CONVERSATIONS)
    agp = rng.random() < 0.5
    try:
        want = {"text": compile_template(template).render(messages=messages, bos_token="<s>", eos_token="</s>",
                                                           add_generation_prompt=agp, tools=None, documents=None)}
    except Exception as e:  # an undefined value used, a type error, raise_exception
        want = {"error": f"{type(e).__name__}: {e}"}
    proc.stdin.write(json.dumps({"template": template, "messages": messages, "add_generation_prompt": agp}) + "\n")
    proc.stdin.flush()
    got = json.loads(proc.stdout.readline())
    if "text" in want:
        rendered += 1
        ok = got.get("text") == want["text"]
    else:
        refused += 1
        ok = "error" in got
    if not ok:
        mismatches.append((template, messages, agp, want, got))
# Lexing: text with stray braces, \r and \r\n, string literals with escapes, comments and tags
# with every whitespace-control sign, nested if blocks and sets, at any position in the text.
FRAGMENTS = [" ", "  ", "\t", "\n", "\r\n", "\r", "a", "{", "}", "%", "#", "} ", " {", "x\n  ", "\n\t ", "\u00e9", "-", "+"]
STRINGS = ["'a'", '"b"', "'\\n'", "'\\\\'", "'\\\"'", '"\\\'"', "'\\x41'", "'\\u00e9'", "'\\101'", "'\\q'",
           "'a\\\nb'", "'{{'", "'%}'", "'}}'", "'#}'", "'\t'", "'\\t\\r'", "'a' 'b'"]


def sign(block=True):
    return rng.choice(["", "", "-", "+"] if block else ["", "", "-"])


def fragment():
    c = rng.random()
    if c < 0.4:
        return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 4)))
    if c < 0.6:
        return ("{{" + sign(False) + rng.choice([" ", "", "\n"]) + rng.choice(STRINGS) + rng.choice([" ", "", "\n"]) +
                sign(False) + "}}")
    if c < 0.75:
        return "{#" + sign() + rng.choice([" c ", "", "\n", " - ", " # "]) + sign() + "#}"
    if c < 0.9:
        inner = "".join(fragment() for _ in range(rng.randint(0, 2)))
        return "{%" + sign() + " if true " + sign() + "%}" + inner + "{%" + sign() + " endif " + sign() + "%}"
    return "{%" + sign() + " set y = " + rng.choice(STRINGS) + " " + sign() + "%}{{ y }}"


for i in range(count):
    template = "".join(fragment() for _ in range(rng.randint(1, 6))) + rng.choice(["", "", "{#", "\n"])
    try:
        want = {"text": compile_template(template).render(messages=[], bos_token="<s>", eos_token="</s>",
                                                           add_generation_prompt=False, tools=None, documents=None)}
    except Exception as e:  # unbalanced braces, an unterminated comment or string
        want = {"error": f"{type(e).__name__}: {e}"}
    proc.stdin.write(json.dumps({"template": template, "messages": [], "add_generation_prompt": False}) + "\n")
    proc.stdin.flush()
    got = json.loads(proc.stdout.readline())
    if "text" in want:
        rendered += 1
        ok = got.get("text") == want["text"]
    else:
        refused += 1
        ok = "error" in got
    if not ok:
        mismatches.append((template, [], False, want, got))
# Expressions: random trees of literals, variables, operators, filters, methods, tests,
# subscripts, slices of variables and conditionals (Python's types and errors meet here).
ATOMS = ["0", "1", "2", "-3", "7", "true", "false", "none", "'a'", "''", "' x '", "'caf\u00e9'", "'a,b,,c'", "'\\n'",
         "[]", "[1, 2, 3]", "['a', 'b']", "[none, true, 'q']", "messages", "messages[0]", "m", "m.role", "m['content']",
         "undefined_name", "ns", "ns.n", "loop.index", "loop.length", "'it''s'", "\"it's\"", "[[1], [2, [3]]]",
         "'\\u00a0x\\u2003'"]
OPERATORS = ["+", "-", "*", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["trim", "length", "count", "tojson", "string", "first", "last", "default('d')", "join(',')", "join", "trim('a')"]
METHODS = ["strip()", "lstrip()", "rstrip(' x')", "startswith('a')", "endswith('')", "split(',')", "split()",
           "replace('a', 'b')", "replace('', '-')", "get('role')", "get('x', 5)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "mapping", "sequence", "iterable", "boolean",
         "true", "false", "even", "odd"]
SLICED = ["messages", "m.role", "m['content']", "m", "loop.index", "ns.n", "undefined_name",
          "messages[0].content.split(',')"]


def expression(depth):
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(ATOMS)
    c = rng.random()
    if c < 0.3:
        return "(" + expression(depth + 1) + " " + rng.choice(OPERATORS) + " " + expression(depth + 1) + ")"
    if c < 0.45:
        return "(" + expression(depth + 1) + " | " + rng.choice(FILTERS) + ")"
    if c < 0.55:
        return "(" + expression(depth + 1) + ")." + rng.choice(METHODS)
    if c < 0.65:
        return "(" + expression(depth + 1) + " is " + rng.choice(["", "not "]) + rng.choice(TESTS) + ")"
    if c < 0.75:
        return "(" + expression(depth + 1) + ")[" + rng.choice(["0", "-1", "1", "5", "'role'", "true"]) + "]"
    if c < 0.85:  # a slice of a constant is folded by jinja2's compiler (undefined, not an error): slice variables
        return "(" + rng.choice(SLICED) + ")[" + rng.choice(["1:", ":-1", "::-1", "::2", "-2:", "5:", "1:2:0", ":", "none:", "'a':"]) + "]"
    if c < 0.92:
        return "(not " + expression(depth + 1) + ")"
    return "(" + expression(depth + 1) + " if " + expression(depth + 1) + " else " + expression(depth + 1) + ")"


chat = [{"role": "user", "content": "Hi, there"}, {"role": "assistant", "content": " ok "}]
for i in range(count):
    template = "{% set ns = namespace(n=3) %}{% for m in messages %}{{ " + expression(0) + " }}|{% endfor %}"
    try:
        want = {"text": compile_template(template).render(messages=chat, bos_token="<s>", eos_token="</s>",
                                                           add_generation_prompt=False, tools=None, documents=None)}
    except Exception as e:
        want = {"error": f"{type(e).__name__}: {e}"}
    proc.stdin.write(json.dumps({"template": template, "messages": chat, "add_generation_prompt": False}) + "\n")
    proc.stdin.flush()
    got = json.loads(proc.stdout.readline())
    if "text" in want:
        rendered += 1
        ok = got.get("text") == want["text"]
    else:
        refused += 1
        ok = "error" in got
    if not ok:
        mismatches.append((template, chat, False, want, got))
proc.stdin.close()
proc.wait()
for template, messages, agp, want, got in mismatches[:5]:
    print("MISMATCH template:", repr(template))
    print("  messages:", messages, "add_generation_prompt:", agp)
    print("  jinja2:  ", repr(want)[:400])
    print("  farthing:", repr(got)[:400])
print(f"{3 * count} random templates: {rendered} rendered by jinja2, {refused} refused by it; {len(mismatches)} differ")
sys.exit(1 if mismatches else 0)
EOF
