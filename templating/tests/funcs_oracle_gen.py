#!/usr/bin/env python3
"""Records Go results (the real helm v3.19 binary: Go text/template + sprig v3.3 + Helm's
functions) for function calls, into funcs_oracle_cases.json beside this script, which
funcs_oracle.rs replays against the Rust function libraries.

Usage: python3 templating/tests/funcs_oracle_gen.py   (needs bin/helm; HELM=... to override)
"""
import json, os, re, shutil, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
HELM = os.environ.get("HELM", os.path.join(HERE, "..", "..", "bin", "helm"))
OUT = os.path.join(HERE, "funcs_oracle_cases.json")

def I(n): return {"i": n}
def I64(n): return {"i64": n}
def F(x): return {"f": x}
def S(s): return {"s": s}
def B(b): return {"b": b}
NIL = {"nil": None}
def L(*a): return {"l": list(a)}
def D(*a): return {"d": list(a)}
def C(fn, *a): return {"call": [fn] + list(a)}

def go_arg(a):
    k, v = next(iter(a.items()))
    if k == "i": return str(v)
    if k == "i64": return "(int64 %d)" % v
    if k == "f":
        r = repr(float(v))
        if r == "inf": return "(float64 \"+Inf\")"
        return r
    if k == "s": return json.dumps(v)
    if k == "b": return "true" if v else "false"
    if k == "nil": return "nil"
    if k == "l": return "(list %s)" % " ".join(go_arg(x) for x in v)
    if k == "d": return "(dict %s)" % " ".join(go_arg(x) for x in v)
    if k == "call": return "(%s %s)" % (v[0], " ".join(go_arg(x) for x in v[1:]))
    raise ValueError(k)

def template(fn, args):
    call = fn + "".join(" " + go_arg(a) for a in args)
    return "{{ $r := %s }}{{ kindOf $r }}|{{ $r }}" % call

def render(cases):
    d = tempfile.mkdtemp(prefix="orc")
    try:
        c = os.path.join(d, "c")
        os.makedirs(os.path.join(c, "templates"))
        open(os.path.join(c, "Chart.yaml"), "w").write("apiVersion: v2\nname: c\nversion: 0.1.0\n")
        names = sorted(cases)
        for i, n in enumerate(names):
            open(os.path.join(c, "templates", f"_k{i}.tpl"), "w").write('{{ define "k%d" }}%s{{ end }}' % (i, cases[n]))
            open(os.path.join(c, "templates", f"k{i}.yaml"), "w").write('v: {{ include "k%d" . | toJson }}\n' % i)
        p = subprocess.run([HELM, "template", c], capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr
        out, cur = {}, None
        for line in p.stdout.splitlines():
            m = re.match(r"# Source: c/templates/k(\d+)\.yaml", line)
            if m: cur = names[int(m.group(1))]
            elif line.startswith("v: ") and cur is not None:
                out[cur] = {"ok": json.loads(line[3:])}; cur = None
        return out, None
    finally:
        shutil.rmtree(d)

def clean_err(fn, e):
    e = e.strip()
    e = re.sub(r"\n*Use --debug flag to render out invalid YAML$", "", e)
    inner = e.split('executing "k0" at <', 1)
    if len(inner) == 2:
        rest = inner[1]
        m = re.search(r"error calling %s: (.*)$" % re.escape(fn), rest, re.S)
        if m: return m.group(1)
        return rest.split(">: ", 1)[1] if ">: " in rest else rest
    return e

def run(cases):
    tpl = {n: template(c["fn"], c["args"]) for n, c in cases.items()}
    out, err = render(tpl)
    if out is None:
        def one(n):
            o, e = render({n: tpl[n]})
            return n, (o[n] if o else {"err": clean_err(cases[n]["fn"], e)})
        with ThreadPoolExecutor(4) as ex:
            out = dict(ex.map(one, sorted(tpl)))
    return out

# ---- cases: (function, args...) ----
CASES = [
 # numeric
 ("add", F(1.9), I(1)), ("add",), ("add", S("3"), B(True), NIL), ("add", S("0x10"), S("010"), S("1.00")),
 ("add1", S("x")), ("sub", I(5), F(2.7)), ("div", I(7), I(2)), ("div", I(-7), I(2)), ("div", I(1), I(0)),
 ("mod", I(7), I(3)), ("mod", I(-7), I(3)), ("mod", I(1), I(0)), ("mul", I(2), I(3), F(4.9)), ("mul", I(3)),
 ("max", I(1), I(5), F(3.3)), ("biggest", S("7"), I(2)), ("min", I(4), I(-2), S("x")),
 ("maxf", F(1.5), I(3), S("2.5")), ("minf", F(1.5), I(3)), ("addf", F(0.1), F(0.2)), ("addf",),
 ("subf", F(1.1), F(0.2), I(3)), ("mulf", F(1.1), F(3)), ("divf", I(1), I(3)), ("divf", F(10), F(4)),
 ("divf", I(1), I(0)), ("add1f", F(1.5)), ("floor", F(1.7)), ("ceil", S("1.2")), ("round", F(3.14159), I(2)),
 ("round", F(2.5), I(0)), ("round", F(-2.5), I(0)), ("round", F(1.2345), I(3), F(0.4)), ("round", F(1.5), F(1.0)),
 ("int", F(3.9)), ("int", S("42")), ("int", S("4.0")), ("int64", S("0x1F")), ("int64", NIL), ("float64", S("1e3")),
 ("float64", I(3)), ("float64", S("abc")), ("atoi", S("12")), ("atoi", S("1.5")), ("atoi", S("+7")), ("atoi", I(3)),
 ("toDecimal", S("0777")), ("toDecimal", I(777)), ("toDecimal", S("89")),
 ("seq", I(3)), ("seq", I(-2)), ("seq", I(2), I(5)), ("seq", I(5), I(2)), ("seq", I(0), I(2), I(10)), ("seq", I(10), I(-3), I(1)), ("seq",),
 ("until", I(3)), ("until", I(-3)), ("until", I(0)), ("until", I64(3)), ("untilStep", I(0), I(10), I(3)), ("untilStep", I(10), I(0), I(-4)),
 ("untilStep", I(0), I(10), I(0)), ("randInt", I(5), I(5)),
 # strings
 ("trim", S("  a b \n")), ("upper", S("straße é")), ("lower", S("ÀBC")), ("title", S("hello wOrld-foo_bar x.y")), ("untitle", S("Hello World")),
 ("repeat", I(3), S("ab")), ("repeat", I(-1), S("x")), ("repeat", F(2), S("x")), ("substr", I(1), I(3), S("hello")), ("substr", I(-1), I(3), S("hello")),
 ("substr", I(2), I(-1), S("hello")), ("substr", I(3), I(1), S("hello")), ("substr", I(0), I(10), S("hi")), ("substr", I(-1), I(10), S("hi")),
 ("substr", I(5), I(-1), S("hi")),
 ("trunc", I(3), S("hello")), ("trunc", I(-3), S("hello")), ("trunc", I(10), S("hi")), ("abbrev", I(5), S("hello world")), ("abbrev", I(3), S("hello world")),
 ("abbrevboth", I(5), I(10), S("1234 5678 9123")), ("abbrevboth", I(0), I(6), S("abcdefghij")),
 ("trimAll", S("$"), S("$$5.00$")), ("trimall", S("ab"), S("abcba")), ("trimSuffix", S("-"), S("hello-")), ("trimPrefix", S("-"), S("-hello")),
 ("nospace", S("hello w o r l d")), ("nospace", S("héllo wörld")), ("initials", S("First Try")), ("initials", S(" über alles")), ("swapcase", S("This Is A.Test")),
 ("snakecase", S("FirstName")), ("snakecase", S("HTTPServer")), ("snakecase", S("http2xx")), ("snakecase", S("HTTP20xOK")), ("snakecase", S("Duration2m3s")),
 ("snakecase", S("Bld4Floor3rd")), ("snakecase", S("GO PATH")), ("snakecase", S("some-kebab_case Words")), ("snakecase", S("a.b.C")),
 ("kebabcase", S("FirstName")), ("kebabcase", S("myHTTPServer2")), ("camelcase", S("http_server")), ("camelcase", S("_complex__case_")),
 ("camelcase", S("GOLANG_IS_GREAT")), ("camelcase", S("some words")), ("camelcase", S("alreadyCamel")), ("camelcase", S("x")), ("camelcase", S("ab_")),
 ("wrap", I(10), S("The quick brown fox jumps over the lazy dog")), ("wrap", I(5), S("averyveryverylongword and more")),
 ("wrapWith", I(5), S("\t"), S("Hello World")), ("wrapWith", I(3), S("|"), S("abcdefgh ij")),
 ("contains", S("cat"), S("catch")), ("hasPrefix", S("ca"), S("cat")), ("hasSuffix", S("at"), S("cat")), ("contains", I(1), S("x")),
 ("quote", S("a\"b"), I(1), NIL, F(1.5), L(I(1))), ("quote",), ("squote", S("a'b"), I(1), NIL), ("cat", S("a"), I(1), NIL, L(S("x"), NIL)),
 ("indent", I(2), S("a\nb")), ("nindent", I(4), S("a\n\nb")), ("indent", I(-1), S("a")), ("replace", S(" "), S("-"), S("a b c")), ("replace", S(""), S("-"), S("ab")),
 ("plural", S("one"), S("many"), I(1)), ("plural", S("one"), S("many"), I(2)), ("plural", S("one"), S("many"), I64(1)),
 ("toString", I(1)), ("toString", F(1e6)), ("toString", NIL), ("toString", L(I(1), S("a"))), ("toString", D(S("a"), I(1))), ("toString", B(True)),
 ("toStrings", L(I(1), NIL, S("a"), F(2.5))), ("toStrings", S("x")), ("toStrings", NIL),
 ("split", S("$"), S("foo$bar$baz")), ("splitList", S(","), S("a,b,,c")), ("splitList", S(""), S("héllo")), ("splitList", S(","), S("")),
 ("splitn", S("$"), I(2), S("foo$bar$baz")), ("splitn", S("$"), I(0), S("foo$bar")), ("splitn", S("$"), I(-1), S("a$b")),
 ("join", S("-"), L(I(1), S("a"), NIL, F(1.5))), ("join", S(","), S("abc")), ("join", S(","), NIL),
 ("sortAlpha", L(S("c"), S("a"), I(10), I(9))), ("sortAlpha", S("x")), ("sortAlpha", NIL),
 ("b64enc", S("hello")), ("b64dec", S("aGVsbG8=")), ("b64dec", S("aGVsbG8")), ("b64dec", S("a!b")), ("b64dec", S("aGVs\nbG8=")), ("b32enc", S("hello")),
 ("b32dec", S("NBSWY3DP")), ("b32dec", S("NBSWY3D")), ("b32dec", S("nbsw")),
 ("sha1sum", S("abc")), ("sha256sum", S("abc")), ("sha512sum", S("abc")), ("adler32sum", S("Wikipedia")),
 # lists
 ("list", I(1), S("a"), NIL), ("tuple",), ("first", L(I(1), I(2))), ("first", L()), ("first", S("abc")), ("first", NIL), ("first", I(1)),
 ("mustFirst", S("x")), ("rest", L(I(1), I(2), I(3))), ("rest", L()), ("last", L(I(1), I(2))), ("initial", L(I(1), I(2), I(3))),
 ("append", L(I(1)), I(2)), ("push", S("x"), I(1)), ("mustPush", I(5), I(1)), ("prepend", L(I(1)), I(0)), ("prepend", D(), I(0)),
 ("concat", L(I(1)), L(I(2), I(3)), L()), ("concat", L(I(1)), S("x")), ("concat", L(I(1)), NIL), ("concat",),
 ("reverse", L(I(1), I(2), I(3))), ("reverse", S("x")), ("uniq", L(I(1), I(1), F(1), S("1"), I64(1), L(I(1)), L(I(1)))),
 ("without", L(I(1), I(2), I(3), I(2)), I(2), I(3)), ("has", I(2), L(I(1), I(2))), ("has", I(2), L(F(2))), ("has", I(2), NIL), ("has", I(2), S("2")),
 ("compact", L(I(0), I(1), S(""), NIL, B(False), L(), D(), S("a"))),
 ("slice", L(I(1), I(2), I(3), I(4)), I(1), I(3)), ("slice", L(I(1), I(2), I(3))), ("slice", L(I(1), I(2), I(3)), I(1)), ("slice", L(I(1), I(2)), I(1), I(5)),
 ("slice", L(), I(0)), ("slice", S("abc"), I(1)), ("slice", L(I(1), I(2), I(3)), S("1"), F(2.9)),
 ("chunk", I(2), L(I(1), I(2), I(3), I(4), I(5))), ("chunk", I(2), L()), ("chunk", I(3), L(I(1), I(2), I(3))), ("chunk", I(0), L(I(1))),
 # dicts
 ("dict", S("a"), I(1), S("b")), ("dict", I(1), S("x"), NIL, S("y")), ("get", D(S("a"), I(1)), S("a")), ("get", D(), S("a")), ("get", NIL, S("a")),
 ("get", L(), S("a")), ("set", D(S("a"), I(1)), S("b"), I(2)), ("set", NIL, S("b"), I(2)), ("unset", D(S("a"), I(1), S("b"), I(2)), S("a")),
 ("hasKey", D(S("a"), NIL), S("a")), ("hasKey", D(), S("a")), ("pluck", S("a"), D(S("a"), I(1)), D(S("b"), I(2)), D(S("a"), I(3))),
 ("keys", D(S("b"), I(1), S("a"), I(2))), ("pick", D(S("a"), I(1), S("b"), I(2)), S("a"), S("c")), ("omit", D(S("a"), I(1), S("b"), I(2)), S("a")),
 ("merge", D(S("a"), I(1), S("n"), D(S("x"), I(1))), D(S("a"), I(2), S("b"), I(3), S("n"), D(S("y"), I(2)))),
 ("merge", D(S("a"), S(""), S("b"), I(0), S("c"), L()), D(S("a"), S("x"), S("b"), I(5), S("c"), L(I(1)))),
 ("merge", D(S("a"), S("keep")), D(S("a"), NIL, S("z"), NIL)), ("merge", NIL, D(S("a"), I(1))), ("merge", D(S("a"), S("s")), D(S("a"), D(S("x"), I(1)))),
 ("mergeOverwrite", D(S("a"), I(1), S("n"), D(S("x"), I(1), S("y"), I(1))), D(S("a"), I(2), S("n"), D(S("y"), I(2)))),
 ("mergeOverwrite", D(S("a"), I(1), S("b"), I(2)), D(S("a"), S(""), S("b"), NIL)), ("mergeOverwrite", D(S("a"), L(I(1))), D(S("a"), L())),
 ("values", D(S("a"), I(1), S("b"), I(2))), ("deepCopy", D(S("a"), L(I(1), D(S("b"), I(2))))), ("deepCopy", NIL),
 ("dig", S("a"), S("b"), S("def"), D(S("a"), D(S("b"), I(1)))), ("dig", S("a"), S("x"), S("def"), D(S("a"), D(S("b"), I(1)))),
 ("dig", S("a"), S("b"), S("def"), D(S("a"), S("str"))), ("dig", S("a"), S("b"), S("def"), D(S("a"), NIL)), ("dig", S("a"), S("d"), L()),
 ("dig", S("a"), S("d")), ("dig", I(1), S("d"), D()), ("dig", S("a"), S("d"), D(S("a"), I(5))),
 # defaults / flow
 ("default", S("d"), NIL), ("default", S("d"), S("")), ("default", S("d"), I(0)), ("default", S("d"), F(0)), ("default", S("d"), B(False)),
 ("default", S("d"), L()), ("default", S("d"), D()), ("default", S("d"), S("x")), ("default", S("d"), I(1)), ("default", S("d")), ("default", S("d"), I64(0)),
 ("empty", NIL), ("empty", S(" ")), ("empty", D(S("a"), I(1))), ("coalesce", NIL, S(""), I(0), S("x"), S("y")), ("coalesce", NIL, S("")), ("coalesce",),
 ("all", I(1), S("a")), ("all", I(1), S("")), ("all",), ("any", I(0), S("a")), ("any",), ("ternary", S("y"), S("n"), B(True)), ("ternary", S("y"), S("n"), B(False)),
 ("ternary", S("y"), S("n"), I(1)), ("ternary", S("y"), S("n"), NIL), ("fail", S("boom")),
 ("toJson", D(S("a"), S("<b>&"), S("c"), L(F(1e6), F(1.5), F(1e21), F(1e-7), NIL, B(True)))), ("toJson", S("x\u2028y\x01")), ("toJson", NIL),
 ("toRawJson", D(S("a"), S("<b>&"))), ("toPrettyJson", D(S("a"), L(I(1), D()), S("b"), L())), ("mustToJson", D(S("x"), I(1))),
 ("fromJson", S('{"a": [1, "x", null, 1e400]}')), ("fromJson", S("{bad")), ("mustFromJson", S("{bad")), ("mustFromJson", S('{"a" 1}')), ("mustFromJson", S("[1 2]")),
 ("mustFromJson", S("tru")), ("mustFromJson", S("1e400")), ("mustFromJson", S('"\\q"')), ("mustFromJson", S("")), ("mustFromJson", S("  ")),
 # reflection
 ("typeOf", I(1)), ("typeOf", C("add", I(1))), ("typeOf", F(1)), ("typeOf", NIL), ("typeOf", L()), ("typeOf", D()), ("typeIs", S("int"), I(1)), ("typeIsLike", S("int"), I(1)),
 ("kindOf", S("x")), ("kindOf", NIL), ("kindOf", L()), ("kindOf", D()), ("kindIs", S("map"), D()), ("deepEqual", L(I(1)), L(I(1))), ("deepEqual", I(1), F(1)),
 ("deepEqual", D(S("a"), L(I(1))), D(S("a"), L(I(1)))),
 # regex
 ("regexMatch", S("^[a-z]+\\d$"), S("abc1")), ("regexMatch", S("("), S("x")), ("mustRegexMatch", S("("), S("x")), ("mustRegexMatch", S("a)"), S("x")),
 ("mustRegexMatch", S("[a"), S("x")), ("mustRegexMatch", S("*"), S("x")), ("mustRegexMatch", S("\\q"), S("x")), ("mustRegexMatch", S("a{2,1}"), S("x")),
 ("mustRegexMatch", S("(?<n>a)"), S("a")), ("regexMatch", S("\\d"), S("٣")), ("regexMatch", S("\\w+"), S("é")), ("regexMatch", S("\\bfoo\\b"), S("éfooé")),
 ("regexFindAll", S("a*"), S("baaab"), I(-1)), ("regexFindAll", S("[0-9]+"), S("a1b22c333"), I(2)), ("regexFindAll", S("x*"), S("abc"), I(-1)),
 ("regexFind", S("[a-z]+"), S("12abc34")), ("regexFind", S("("), S("x")), ("regexReplaceAll", S("a(x*)b"), S("-ab-axxb-"), S("${1}W")),
 ("regexReplaceAll", S("a(x*)b"), S("-ab-axxb-"), S("$1W")), ("regexReplaceAll", S("x*"), S("abc"), S("-")), ("regexReplaceAllLiteral", S("a(x*)b"), S("-ab-axxb-"), S("${1}")),
 ("regexSplit", S("z+"), S("pizza"), I(-1)), ("regexSplit", S("z+"), S("pizza"), I(1)), ("regexSplit", S(""), S("abc"), I(-1)), ("regexSplit", S("a*"), S("baaac"), I(-1)),
 ("regexSplit", S(","), S(""), I(-1)), ("regexQuoteMeta", S("1.2.3+[x]{y}|$^*?()#&-~")), ("regexFindAll", S("(?i)ABC"), S("abc aBc"), I(-1)),
 ("regexMatch", S("[[:alpha:]]+"), S("abc")), ("regexMatch", S("[\\d-]+"), S("1-2")), ("regexMatch", S("\\Qa.b\\E"), S("a.b")),
 # semver
 ("semverCompare", S("^1.2"), S("1.9.0")), ("semverCompare", S("^1.2"), S("2.0.0")), ("semverCompare", S("~1.2.3"), S("1.2.9")), ("semverCompare", S("~1.2.3"), S("1.3.0")),
 ("semverCompare", S(">=1.0 <2.0"), S("1.5.0")), ("semverCompare", S(">=1.0, <2.0"), S("2.0.0")), ("semverCompare", S("1.x"), S("1.4.2")), ("semverCompare", S("<1.0 || >=3.0"), S("3.1.0")),
 ("semverCompare", S(">=1.21-0"), S("v1.28.3-gke.100")), ("semverCompare", S(">=1.21"), S("v1.28.3-gke.100")), ("semverCompare", S("1.2 - 1.4"), S("1.3.5")),
 ("semverCompare", S("^0.2.3"), S("0.3.0")), ("semverCompare", S("foo"), S("1.0.0")), ("semverCompare", S(">1.0"), S("x.y")), ("semverCompare", S("!=1.2.3"), S("1.2.3")),
 ("semverCompare", S(">= 1.2.3"), S("1.2.3")), ("semverCompare", S("=1.2.3"), S("1.2.3+meta")), ("semverCompare", S("<=1.2"), S("1.2.9")), ("semverCompare", S(">1.2"), S("1.3.0")),
 ("semverCompare", S(">1.2"), S("1.2.5")), ("semverCompare", S("~1"), S("1.9.9")), ("semverCompare", S("^0.0.3"), S("0.0.4")), ("semverCompare", S("*"), S("1.0.0-rc1")),
 ("semverCompare", S(">=1.0.0-alpha"), S("1.0.0-beta")), ("semverCompare", S(">1.0.0-alpha.1"), S("1.0.0-alpha.beta")), ("semverCompare", S("1.2.3.4"), S("1.2.3")),
 ("semverCompare", S("^1.2.3"), S("1.2.3-01")),
 # paths/urls
 ("base", S("/a/b/")), ("base", S("")), ("base", S("///")), ("dir", S("/a/b/c")), ("dir", S("a")), ("dir", S("/")), ("clean", S("a//b/../c/./d/")), ("clean", S("/../a")),
 ("clean", S("")), ("clean", S("../../x")), ("ext", S("a/b.tar.gz")), ("ext", S("a.b/c")), ("isAbs", S("/x")), ("osBase", S("a/b")), ("osExt", S("x.y")),
 ("urlParse", S("https://user:pa ss@host.com:8080/p/a%20t/h?q=1&r=2#frag ment")), ("urlParse", S("mailto:x@y.z")), ("urlParse", S("/rel/path?x")), ("urlParse", S("%zz")),
 ("urlParse", S("http://[::1]:80/")), ("urlJoin", D(S("scheme"), S("https"), S("host"), S("h.com"), S("path"), S("/a b"), S("query"), S("x=1"), S("fragment"), S("f g"), S("userinfo"), S("u:p"))),
 ("urlJoin", D(S("path"), S("a:b"))), ("urlJoin", D(S("scheme"), S("mailto"), S("opaque"), S("x@y"))), ("urlJoin", D(S("host"), I(1))),
 # dates (deterministic ones)
 ("duration", I(95)), ("duration", S("95")), ("duration", I64(3700)), ("duration", S("x")), ("durationRound", S("2h10m")), ("durationRound", I64(3600000000000)),
 ("durationRound", S("-3d")), ("durationRound", S("400h")), ("durationRound", S("9000h")), ("durationRound", I(5)),
 ("date", S("2006-01-02"), I(0)), ("dateInZone", S("2006-01-02T15:04:05Z07:00 MST Mon Jan _2 3PM .000"), I(1136214245), S("UTC")),
 ("dateInZone", S("Monday 2 January 06 15:04:05 -0700 -07:00 Z0700"), I64(1136214245), S("Europe/Berlin")), ("dateInZone", S("2006"), I(0), S("Bad/Zone")),
 ("htmlDateInZone", I(86400), S("UTC")), ("unixEpoch", C("toDate", S("2006-01-02"), S("2020-01-01"))), ("unixEpoch", S("x")),
 ("dateInZone", S("2006-01-02 15:04:05 MST"), C("toDate", S("2006-01-02T15:04:05Z07:00"), S("2020-02-29T10:11:12+02:00")), S("UTC")),
 ("dateInZone", S("15:04:05.000 Z07:00"), C("dateModify", S("1h30m"), C("toDate", S("2006-01-02"), S("2020-01-01"))), S("UTC")),
 ("dateInZone", S("15:04"), C("dateModify", S("bad"), C("toDate", S("2006-01-02"), S("2020-01-01"))), S("UTC")),
 ("mustDateModify", S("bad"), C("toDate", S("2006-01-02"), S("2020-01-01"))), ("mustDateModify", S("1"), C("toDate", S("2006-01-02"), S("2020-01-01"))),
 ("mustToDate", S("2006-01-02"), S("2020-13-01")), ("mustToDate", S("2006-01-02"), S("x")), ("mustToDate", S("2006-01-02"), S("2020-01-01x")),
 ("mustToDate", S("2006-01-02"), S("2020-02-30")), ("toDate", S("2006-01-02"), S("bad")), ("dateModify", S("1h"), S("x")),
 ("dateInZone", S("Jan 2 2006 3:04pm"), C("toDate", S("Jan 2 2006 3:04pm"), S("Mar 7 2021 11:45pm")), S("UTC")),
 # misc
 ("hello",), ("getHostByName", S("localhost")), ("uuidv4", I(1)),
]
LONG = "this is a very long string that goes on and on and on and on and on beyond eighty columns for sure yes"
CASES += [
 ("toYaml", D(S("n"), I(1), S("y"), S("y"), S("k"), L(L(I(1), I(2)), D(S("a"), L(I(3)), S("b"), S("x\ny")), L(), D()), S("t"), S("a\tb"), S("s"), S(" x"))),
 ("toYaml", D(S("c"), S("a: b"), S("h"), S("#x"), S("d"), S("-"), S("e"), S("2001-12-14"), S("f"), S("1:20"), S("g"), S("0x1F"), S("i"), S(".5"), S("j"), S("1_000"))),
 ("toYaml", D(S("big"), F(1e20), S("big2"), F(1e19), S("small"), F(1e-7), S("ii"), I64(123456789012), S("neg"), F(-0.0), S("half"), F(0.5), S("f3"), F(3.0))),
 ("toYaml", D(S("lit"), S("a\n\nb\n\n"), S("lit2"), S("\nx"), S("trail"), S("x \ny"), S("crlf"), S("a\r\nb"), S("tabs"), S("a\n\tb"), S("uni"), S("héllo\nwörld"))),
 ("toYaml", D(S("long"), S(LONG), S("longq"), S("'" + LONG), S("longd"), S("yes " + LONG + "\t"), S("nospace"), S("x" * 100))),
 ("toYaml", L(S("a"), L(S("b"), D(S("c"), L(S("d")))), D())), ("toYaml", S("x")), ("toYaml", NIL), ("toYaml", I(1)), ("toYaml", L()), ("toYaml", D()),
 ("toYaml", D(S("a10"), I(1), S("a2"), I(2), S("B"), I(3), S("b"), I(4), S("_x"), I(5), S("1"), I(6), S("10"), I(7), S("2"), I(8), S("a01"), I(9), S("a1"), I(10), S("é"), I(11))),
 ("toYaml", D(S("k" * 130), I(1), S("a\nb"), I(2), S(""), I(3), S("- x"), I(4), S("on"), I(5), S("null"), S("~"), S("true"), S("False"), S("x"), S("NO"))),
 ("toYaml", D(S("emb"), S("a 'q' \"d\""), S("bs"), S("a\\b"), S("nul"), S("a\u0000b"), S("nel"), S("a\u0085b"), S("bom"), S("\ufeffx"), S("esc"), S("\u001b"), S("ls"), S("a\u2028b"))),
 ("toYaml", D(S("q1"), S("?x"), S("q2"), S("? x"), S("q3"), S("x:"), S("q4"), S("x #y"), S("q5"), S("x#y"), S("q6"), S("[x"), S("q7"), S("x]"), S("q8"), S("---"), S("q9"), S("..."), S("q10"), S("@x"), S("q11"), S("%x"), S("q12"), S("`x"), S("q13"), S("!x"), S("q14"), S("&x"), S("q15"), S("*x"), S("q16"), S("|x"), S("q17"), S(">x"), S("q18"), S("x, y"), S("q19"), S("{x}"))),
 ("toYaml", D(S("n1"), S("1"), S("n2"), S("1.5"), S("n3"), S("-1"), S("n4"), S("+1"), S("n5"), S("1e3"), S("n6"), S("0o17"), S("n7"), S("0b101"), S("n8"), S(".inf"), S("n9"), S("-.INF"), S("n10"), S(".NaN"), S("n11"), S("0.1.2"), S("n12"), S("1.2.3.4"), S("n13"), S("12:30:45"), S("n14"), S("2020-01-02T03:04:05Z"), S("n15"), S("2020-1-2"))),
 ("toYaml", D(S("nested"), D(S("l"), L(D(S("a"), I(1), S("b"), L(I(1), I(2))), D()), S("m"), D(S("x"), D(S("y"), S(LONG)))))),
 ("fromYaml", S("a: 1\nb: [x, 2.5, true, null]\nc: {d: yes}\n")), ("fromYaml", S("- 1")), ("fromYaml", S("a: [")), ("fromYaml", S("")), ("fromYaml", S("a: 0777\nb: 0x1F\nc: 1e3\nd: .5\ne: 1_000\nf: 2001-12-14\ng: ~\nh: 'yes'\ni: on\n")),
 ("fromYaml", S("a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n")), ("fromYaml", S("a: .inf")), ("fromYaml", S("1: a\n2.5: b\ntrue: c\n")), ("fromYaml", S("a: |\n  x\n  y\nb: >\n  folded\n  text\n")),
 ("fromYaml", S("a: !!str 1\nb: !!int \"2\"\nc: !custom x\n")), ("fromYaml", S("a: 1\na: 2\n")), ("fromYaml", S("--- \na: 1\n---\nb: 2\n")), ("fromYaml", S("a:\n- b\n-  c: d\n   e: f\n")),
 ("fromYamlArray", S("- 1\n- a")), ("fromYamlArray", S("a: 1")), ("fromYamlArray", S("[")),
 ("fromJson", S('{"a": 1}')), ("fromJson", S("[1]")), ("fromJson", S("{")), ("fromJson", S('{"a": 1e400}')), ("fromJsonArray", S("[1, \"x\"]")), ("fromJsonArray", S("{}")),
 ("toToml", D(S("b"), I(1), S("a"), S("x\"y"), S("f"), F(1.5), S("g"), F(1e6), S("h"), F(3.0), S("t"), B(True), S("l"), L(I(1), I(2)), S("e"), L(), S("n"), D(S("z"), I(1), S("m"), D(S("q"), I(2)), S("k"), S("v")), S("arr"), L(D(S("x"), I(1)), D(S("y"), I(2))), S("key with space"), I(1), S("nil"), NIL, S("mixed"), L(I(1), S("a")))),
 ("toToml", L(I(1), I(2))), ("toToml", S("x")), ("toToml", D(S("a"), D())), ("toToml", D(S("a"), L(L(I(1), I(2)), L(I(3))))), ("toToml", D(S("a"), L(I(1), NIL))), ("toToml", L(D(S("a"), I(1)))),
 ("toToml", D(S("a"), L(D(S("x"), I(1)), S("s")))), ("toToml", D(S("a"), D(S("b"), D(S("c"), L(D(S("d"), I(1))))))),
 ("required", S("need it"), NIL), ("required", S("need it"), S("")), ("required", S("need it"), I(0)), ("required", S("need it"), S("x")), ("lookup", S("v1"), S("Pod"), S("ns"), S("n")),
 ("tpl", S("{{ .x }}"), D(S("x"), I(1))),
]
CASES += [
 ("derivePassword", I(1), S("long"), S("password"), S("user"), S("example.com")), ("derivePassword", I(1), S("nope"), S("p"), S("u"), S("s")),
 ("decryptAES", S("secretkey"), S("VZBCqmk9iLTBqUwpOY28TO7dN6KcyNGod3FvE1UqcWjkNzslOG1iWFlujruc2qImxk5YvhD4+58RhjpyY8CiBA==")),
 ("decryptAES", S("secretkey"), C("encryptAES", S("secretkey"), S("round trip"))), ("decryptAES", S("k"), S("")), ("encryptAES", S("k"), S("")),
 ("decryptAES", S("k"), S("abc")), ("decryptAES", S("k"), S("YWJj")), ("decryptAES", S("k"), S("MDEyMzQ1Njc4OWFiY2RlZjAx")),
 ("htpasswd", S("a:b"), S("pw")), ("bcrypt", S("x" * 80)),
]

cases = {}
for i, (fn, *args) in enumerate(CASES):
    name = "%04d_%s" % (i, fn)
    cases[name] = {"fn": fn, "args": args}
res = run(cases)
recs = []
for n in sorted(cases):
    recs.append({"name": n, "fn": cases[n]["fn"], "args": cases[n]["args"], "go": res[n]})
json.dump(recs, open(OUT, "w"), indent=0, ensure_ascii=False)
print(len(recs), "cases;", sum(1 for r in recs if "err" in r["go"]), "errors")
