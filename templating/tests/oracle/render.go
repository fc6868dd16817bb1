// Command render is the Go side of the differential test of the Rust `text/template` engine
// (templating/tests/gotemplate_oracle.rs): it renders templates with Go's real text/template and
// sprig v3, exactly as Landscaper's Go template executor sets them up
// (template.New(name).Funcs(sprig.TxtFuncMap() without env/expandenv).Option("missingkey=zero")),
// and prints each result as one JSON line.
//
// Two modes, one process run for a whole batch:
//
//	render -corpus DIR    parses every DIR/*.txt corpus file (format below) and prints, per case,
//	                      the case itself (name, file, template, data, flags) and Go's result.
//	render                reads cases as JSON lines on stdin ({"name","template","data","funcs"})
//	                      and prints Go's result per case (used for generated templates).
//	render -list-funcs    prints the names of the sprig functions in use, one a line.
//	render -list-sigs     prints each sprig function's name and Go parameter types, one a line:
//	                      NAME<TAB>TYPE;TYPE;...TYPE (a variadic parameter as ...T).
//
// A result line: {"name", "ok", "output", "utf8", "output_b64"?, "error"?, "phase"?, ...case}.
// "data" is JSON text (decoded with encoding/json into interface{}: numbers are float64, as in
// Landscaper); an empty "data" executes with nil data. "funcs" is "sprig" (default) or "builtin"
// (no functions beyond text/template's own).
//
// Corpus format (DIR/*.txt), line based:
//
//	;; comment                 a comment line (ignored anywhere outside a template body,
//	                           and also inside one: no template line starts with ";;")
//	%data                      starts the file's default data: JSON text up to a line "%end";
//	...                        applies to the cases after it (until the next %data)
//	%end
//	=== NAME [FLAG...]         starts a case; its template is every following line up to the
//	template lines             next "===", "%data" or the end of the file, joined with "\n",
//	                           trailing empty lines dropped (flag `nl` appends one "\n").
//
// Flags: `exact` (the Rust error message must equal Go's), `nl`, `nodata` (nil data),
// `funcs=builtin`, `skip=REASON` (not compared; REASON without spaces), and last on the line
// `data=JSON` (the case's own data, the rest of the line).
//
// Build (GOPATH mode, offline, with Debian's golang-go and golang-github-masterminds-sprig-dev):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE=$TMP/gocache GOFLAGS= \
//	    go build -o $TMP/render templating/tests/oracle/render.go
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/Masterminds/sprig"
)

type Case struct {
	Name       string `json:"name"`
	File       string `json:"file,omitempty"`
	Line       int    `json:"line,omitempty"`
	Template   string `json:"template"`
	Data       string `json:"data"`
	Funcs      string `json:"funcs,omitempty"`
	ExactError bool   `json:"exact_error,omitempty"`
	Skip       string `json:"skip,omitempty"`
}

type Result struct {
	Case
	OK        bool   `json:"ok"`
	Output    string `json:"output"`
	UTF8      bool   `json:"utf8"`
	OutputB64 string `json:"output_b64,omitempty"`
	Error     string `json:"error,omitempty"`
	// "data" (the case's JSON did not decode), "parse", "exec" or "panic".
	Phase string `json:"phase,omitempty"`
}

func funcMap(kind string) (template.FuncMap, error) {
	switch kind {
	case "", "sprig":
		m := sprig.TxtFuncMap()
		delete(m, "env")
		delete(m, "expandenv")
		return m, nil
	case "builtin":
		return template.FuncMap{}, nil
	}
	return nil, fmt.Errorf("unknown funcs %q", kind)
}

func render(c Case) (r Result) {
	r.Case = c
	r.UTF8 = true
	defer func() {
		if p := recover(); p != nil {
			r.OK = false
			r.Output = ""
			r.Phase = "panic"
			r.Error = fmt.Sprint(p)
		}
	}()
	var data interface{}
	if strings.TrimSpace(c.Data) != "" {
		if err := json.Unmarshal([]byte(c.Data), &data); err != nil {
			r.Phase, r.Error = "data", err.Error()
			return
		}
	}
	funcs, err := funcMap(c.Funcs)
	if err != nil {
		r.Phase, r.Error = "data", err.Error()
		return
	}
	t, err := template.New(c.Name).Funcs(funcs).Option("missingkey=zero").Parse(c.Template)
	if err != nil {
		r.Phase, r.Error = "parse", err.Error()
		return
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		r.Phase, r.Error = "exec", err.Error()
		return
	}
	r.OK = true
	r.Output = buf.String()
	if !utf8.Valid(buf.Bytes()) {
		r.UTF8 = false
		r.OutputB64 = base64.StdEncoding.EncodeToString(buf.Bytes())
	}
	return
}

func parseCorpusFile(path string) ([]Case, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(raw), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	file := filepath.Base(path)
	var cases []Case
	defaultData := ""
	var cur *Case
	var body []string
	nl := false
	flush := func() {
		if cur == nil {
			return
		}
		for len(body) > 0 && strings.TrimSpace(body[len(body)-1]) == "" {
			body = body[:len(body)-1]
		}
		cur.Template = strings.Join(body, "\n")
		if nl {
			cur.Template += "\n"
		}
		cases = append(cases, *cur)
		cur, body, nl = nil, nil, false
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.HasPrefix(line, ";;"):
			continue
		case line == "%data":
			flush()
			var js []string
			i++
			for ; i < len(lines) && lines[i] != "%end"; i++ {
				js = append(js, lines[i])
			}
			if i == len(lines) {
				return nil, fmt.Errorf("%s: %%data without %%end", file)
			}
			defaultData = strings.Join(js, "\n")
		case strings.HasPrefix(line, "=== "):
			flush()
			header := strings.TrimSpace(line[4:])
			c := Case{File: file, Line: i + 1, Data: defaultData}
			if k := strings.Index(header, " data="); k >= 0 {
				c.Data = header[k+6:]
				header = header[:k]
			}
			fields := strings.Fields(header)
			if len(fields) == 0 {
				return nil, fmt.Errorf("%s:%d: case without a name", file, i+1)
			}
			c.Name = fields[0]
			for _, f := range fields[1:] {
				switch {
				case f == "exact":
					c.ExactError = true
				case f == "nl":
					nl = true
				case f == "nodata":
					c.Data = ""
				case strings.HasPrefix(f, "funcs="):
					c.Funcs = f[6:]
				case strings.HasPrefix(f, "skip="):
					c.Skip = f[5:]
				default:
					return nil, fmt.Errorf("%s:%d: unknown flag %q", file, i+1, f)
				}
			}
			cur = &c
		default:
			if cur == nil {
				if strings.TrimSpace(line) != "" {
					return nil, fmt.Errorf("%s:%d: text outside a case: %q", file, i+1, line)
				}
				continue
			}
			body = append(body, line)
		}
	}
	flush()
	return cases, nil
}

func main() {
	corpus := flag.String("corpus", "", "directory of *.txt corpus files (else: JSON lines on stdin)")
	listFuncs := flag.Bool("list-funcs", false, "print the names of the sprig functions the oracle uses, one a line")
	listSigs := flag.Bool("list-sigs", false, "print the Go parameter types of the sprig functions, one function a line")
	flag.Parse()

	if *listSigs {
		m, _ := funcMap("sprig")
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t := reflect.TypeOf(m[name])
			params := make([]string, t.NumIn())
			for i := range params {
				params[i] = t.In(i).String()
				if t.IsVariadic() && i == t.NumIn()-1 {
					params[i] = "..." + t.In(i).Elem().String()
				}
			}
			fmt.Printf("%s\t%s\n", name, strings.Join(params, ";"))
		}
		return
	}

	if *listFuncs {
		m, _ := funcMap("sprig")
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		sort.Strings(names)
		fmt.Println(strings.Join(names, "\n"))
		return
	}

	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	emit := func(r Result) {
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "encode:", err)
			os.Exit(2)
		}
	}

	if *corpus != "" {
		files, err := filepath.Glob(filepath.Join(*corpus, "*.txt"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		sort.Strings(files)
		seen := map[string]string{}
		for _, f := range files {
			cases, err := parseCorpusFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "corpus:", err)
				os.Exit(2)
			}
			for _, c := range cases {
				if prev, dup := seen[c.Name]; dup {
					fmt.Fprintf(os.Stderr, "corpus: case %q in %s:%d already defined in %s\n", c.Name, c.File, c.Line, prev)
					os.Exit(2)
				}
				seen[c.Name] = fmt.Sprintf("%s:%d", c.File, c.Line)
				emit(render(c))
			}
		}
		return
	}

	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	for {
		var c Case
		if err := dec.Decode(&c); err != nil {
			if err.Error() == "EOF" {
				return
			}
			fmt.Fprintln(os.Stderr, "stdin:", err)
			os.Exit(2)
		}
		emit(render(c))
	}
}
