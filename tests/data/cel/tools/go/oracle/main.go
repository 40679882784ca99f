// Command celoracle evaluates CEL requests (JSON lines on stdin) with the real Kubernetes CEL environments and
// prints what kube-apiserver / kube-scheduler would report (JSON lines on stdout).
//
// Request modes:
//   - "expr": the Kubernetes base environment (NewExpressions or StoredExpressions) plus cel.bind, with the
//     declared variables; compile, estimate the cost, evaluate the bindings.
//   - "dra":  the DRA device-selector compiler (k8s.io/dynamic-resource-allocation/cel), as the scheduler and the
//     API server use it; compile (with cost estimate), then DeviceMatches.
//   - "cost": the environment of k8s.io/apiserver/pkg/cel/library cost_test.go (no size estimator, no optimizer).
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/cel/library"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type request struct {
	ID       string                     `json:"id"`
	Mode     string                     `json:"mode"`
	Expr     string                     `json:"expr"`
	Decls    map[string]string          `json:"decls"`
	Bindings map[string]json.RawMessage `json:"bindings"`
	EnvType  string                     `json:"env"`
	Features struct {
		ListTypeAttributes bool `json:"listTypeAttributes"`
		ConsumableCapacity bool `json:"consumableCapacity"`
	} `json:"features"`
	Device struct {
		Driver                   string                     `json:"driver"`
		Attributes               map[string]json.RawMessage `json:"attributes"`
		Capacity                 map[string]string          `json:"capacity"`
		AllowMultipleAllocations *bool                      `json:"allowMultipleAllocations"`
	} `json:"device"`
}

type response struct {
	ID            string     `json:"id"`
	CompileError  *string    `json:"compileError"`
	OutputType    string     `json:"outputType,omitempty"`
	EstimatedCost *[2]uint64 `json:"estimatedCost,omitempty"`
	CostError     *string    `json:"costError,omitempty"`
	Result        any        `json:"result,omitempty"`
	EvalError     *string    `json:"evalError,omitempty"`
	ActualCost    *uint64    `json:"actualCost,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "bad request:", err)
			os.Exit(2)
		}
		out.Encode(handle(req))
	}
}

func handle(req request) (resp response) {
	resp.ID = req.ID
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic: %v", r)
			resp.EvalError = &msg
		}
	}()
	switch req.Mode {
	case "dra":
		return handleDRA(req, resp)
	case "cost":
		return handleCost(req, resp)
	default:
		return handleExpr(req, resp)
	}
}

func str(s string) *string { return &s }

func envType(name string) environment.Type {
	if name == "stored" {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

func handleExpr(req request, resp response) response {
	var opts []cel.EnvOption
	names := make([]string, 0, len(req.Decls))
	for name := range req.Decls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t, err := parseType(req.Decls[name])
		if err != nil {
			resp.CompileError = str("bad decl: " + err.Error())
			return resp
		}
		opts = append(opts, cel.Variable(name, t))
	}
	envset, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(
		environment.VersionedOptions{
			IntroducedVersion: version.MajorMinor(1, 0),
			EnvOptions:        append([]cel.EnvOption{ext.Bindings(ext.BindingsVersion(0))}, opts...),
		})
	if err != nil {
		resp.CompileError = str("env: " + err.Error())
		return resp
	}
	env, _ := envset.Env(envType(req.EnvType))
	ast, issues := env.Compile(req.Expr)
	if issues != nil && issues.Err() != nil {
		resp.CompileError = str(issues.String())
		return resp
	}
	resp.OutputType = ast.OutputType().String()
	est, err := env.EstimateCost(ast, &library.CostEstimator{})
	if err != nil {
		resp.CostError = str(err.Error())
	} else {
		resp.EstimatedCost = &[2]uint64{est.Min, est.Max}
	}
	prog, err := env.Program(ast)
	if err != nil {
		resp.EvalError = str("program: " + err.Error())
		return resp
	}
	vars := map[string]any{}
	for name, raw := range req.Bindings {
		v, err := decodeValue(raw)
		if err != nil {
			resp.EvalError = str("bad binding: " + err.Error())
			return resp
		}
		vars[name] = v
	}
	val, details, err := prog.Eval(vars)
	if details != nil && details.ActualCost() != nil {
		c := *details.ActualCost()
		resp.ActualCost = &c
	}
	if err != nil {
		resp.EvalError = str(err.Error())
		return resp
	}
	resp.Result = encodeValue(val)
	return resp
}

func handleCost(req request, resp response) response {
	est := &library.CostEstimator{SizeEstimator: &testSizes{}}
	env, err := cel.NewEnv(
		ext.Strings(ext.StringsVersion(2)), library.URLs(), library.Regex(), library.Lists(), library.Authz(),
		library.AuthzSelectors(), library.Quantity(), ext.Sets(), library.IP(), library.CIDR(), library.Format(),
		library.JSONPatch(), cel.OptionalTypes(), cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		ext.TwoVarComprehensions(), library.SemverLib(library.SemverVersion(1)),
	)
	if err == nil {
		env, err = env.Extend(cel.Variable("authorizer", library.AuthorizerType))
	}
	if err != nil {
		resp.CompileError = str("env: " + err.Error())
		return resp
	}
	ast, issues := env.Compile(req.Expr)
	if issues != nil && issues.Err() != nil {
		resp.CompileError = str(issues.String())
		return resp
	}
	resp.OutputType = ast.OutputType().String()
	estCost, err := env.EstimateCost(ast, est)
	if err != nil {
		resp.CostError = str(err.Error())
	} else {
		resp.EstimatedCost = &[2]uint64{estCost.Min, estCost.Max}
	}
	prog, err := env.Program(ast, cel.CostTracking(est))
	if err != nil {
		resp.EvalError = str("program: " + err.Error())
		return resp
	}
	val, details, err := prog.Eval(map[string]any{"authorizer": library.NewAuthorizerVal(nil, allowAll{})})
	if details != nil && details.ActualCost() != nil {
		c := *details.ActualCost()
		resp.ActualCost = &c
	}
	if err != nil {
		resp.EvalError = str(err.Error())
		return resp
	}
	resp.Result = encodeValue(val)
	return resp
}

// testSizes is cost_test.go's size estimator: any string or bytes value is at most 12 long.
type testSizes struct{}

func (testSizes) EstimateSize(element checker.AstNode) *checker.SizeEstimate {
	switch element.Type().Kind() {
	case types.StringKind, types.BytesKind:
		return &checker.SizeEstimate{Min: 0, Max: 12}
	}
	return nil
}

func (testSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

type allowAll struct{}

func (allowAll) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionAllow, "", nil
}

func handleDRA(req request, resp response) response {
	compiler := dracel.GetCompiler(dracel.Features{
		EnableConsumableCapacity: req.Features.ConsumableCapacity,
		EnableListTypeAttributes: req.Features.ListTypeAttributes,
	})
	et := envType(req.EnvType)
	result := compiler.CompileCELExpression(req.Expr, dracel.Options{EnvType: &et})
	if result.Error != nil {
		resp.CompileError = str(result.Error.Error())
		return resp
	}
	resp.OutputType = result.OutputType.String()
	resp.EstimatedCost = &[2]uint64{0, result.MaxCost}
	device := dracel.Device{
		Driver:                   req.Device.Driver,
		AllowMultipleAllocations: req.Device.AllowMultipleAllocations,
		Attributes:               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
	for name, raw := range req.Device.Attributes {
		attr, err := decodeAttribute(raw)
		if err != nil {
			resp.EvalError = str("bad attribute: " + err.Error())
			return resp
		}
		device.Attributes[resourceapi.QualifiedName(name)] = attr
	}
	for name, q := range req.Device.Capacity {
		device.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: resource.MustParse(q)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	match, details, err := result.DeviceMatches(ctx, device)
	if details != nil && details.ActualCost() != nil {
		c := *details.ActualCost()
		resp.ActualCost = &c
	}
	if err != nil {
		resp.EvalError = str(err.Error())
		return resp
	}
	resp.Result = map[string]any{"bool": match}
	return resp
}

func decodeAttribute(raw json.RawMessage) (resourceapi.DeviceAttribute, error) {
	var a struct {
		Int      *int64   `json:"int"`
		Bool     *bool    `json:"bool"`
		String   *string  `json:"string"`
		Version  *string  `json:"version"`
		Ints     []int64  `json:"ints"`
		Bools    []bool   `json:"bools"`
		Strings  []string `json:"strings"`
		Versions []string `json:"versions"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return resourceapi.DeviceAttribute{}, err
	}
	return resourceapi.DeviceAttribute{IntValue: a.Int, BoolValue: a.Bool, StringValue: a.String,
		VersionValue: a.Version, IntValues: a.Ints, BoolValues: a.Bools, StringValues: a.Strings,
		VersionValues: a.Versions}, nil
}

// parseType reads the type notation of the conformance data: int, list(int), map(string, dyn),
// optional_type(int), kubernetes.Quantity, ...
func parseType(s string) (*cel.Type, error) {
	t, rest, err := parseTypeAt(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("trailing %q in %q", rest, s)
	}
	return t, nil
}

func parseTypeAt(s string) (*cel.Type, string, error) {
	end := strings.IndexAny(s, "(),")
	if end < 0 {
		end = len(s)
	}
	name, rest := s[:end], s[end:]
	var params []*cel.Type
	if strings.HasPrefix(rest, "(") {
		rest = rest[1:]
		for {
			p, r, err := parseTypeAt(rest)
			if err != nil {
				return nil, "", err
			}
			params = append(params, p)
			rest = r
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
				continue
			}
			if !strings.HasPrefix(rest, ")") {
				return nil, "", fmt.Errorf("expected ) in %q", s)
			}
			rest = rest[1:]
			break
		}
	}
	simple := map[string]*cel.Type{
		"int": cel.IntType, "uint": cel.UintType, "double": cel.DoubleType, "bool": cel.BoolType,
		"string": cel.StringType, "bytes": cel.BytesType, "null_type": cel.NullType, "dyn": cel.DynType,
		"any": cel.AnyType, "timestamp": cel.TimestampType, "duration": cel.DurationType,
		"google.protobuf.Timestamp": cel.TimestampType, "google.protobuf.Duration": cel.DurationType,
		"kubernetes.Quantity": apiservercel.QuantityDeclType.CelType(), "kubernetes.Semver": apiservercel.SemverType,
		"kubernetes.URL": apiservercel.URLType, "net.IP": apiservercel.IPType, "net.CIDR": apiservercel.CIDRType,
	}
	switch name {
	case "list":
		if len(params) != 1 {
			return nil, "", fmt.Errorf("list needs 1 param")
		}
		return cel.ListType(params[0]), rest, nil
	case "map":
		if len(params) != 2 {
			return nil, "", fmt.Errorf("map needs 2 params")
		}
		return cel.MapType(params[0], params[1]), rest, nil
	case "optional_type":
		return cel.OptionalType(params[0]), rest, nil
	case "type":
		if len(params) == 1 {
			return cel.TypeType, rest, nil
		}
		return cel.TypeType, rest, nil
	}
	if t, ok := simple[name]; ok {
		return t, rest, nil
	}
	if strings.HasPrefix(name, "~") {
		return cel.TypeParamType(name[1:]), rest, nil
	}
	return nil, "", fmt.Errorf("unknown type %q", name)
}

// decodeValue reads a tagged value: {"int": "1"}, {"list": [...]}, {"map": [[k, v], ...]}, ...
func decodeValue(raw json.RawMessage) (any, error) {
	var tagged map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tagged); err != nil {
		return nil, err
	}
	if len(tagged) != 1 {
		return nil, fmt.Errorf("value must have one tag: %s", raw)
	}
	for tag, body := range tagged {
		var s string
		_ = json.Unmarshal(body, &s)
		switch tag {
		case "int":
			v, err := strconv.ParseInt(s, 10, 64)
			return types.Int(v), err
		case "uint":
			v, err := strconv.ParseUint(s, 10, 64)
			return types.Uint(v), err
		case "double":
			switch s {
			case "inf":
				return types.Double(math.Inf(1)), nil
			case "-inf":
				return types.Double(math.Inf(-1)), nil
			case "nan":
				return types.Double(math.NaN()), nil
			}
			v, err := strconv.ParseFloat(s, 64)
			return types.Double(v), err
		case "string":
			return types.String(s), nil
		case "bytes_b64":
			b, err := base64.StdEncoding.DecodeString(s)
			return types.Bytes(b), err
		case "bool":
			var b bool
			err := json.Unmarshal(body, &b)
			return types.Bool(b), err
		case "null":
			return types.NullValue, nil
		case "list":
			var items []json.RawMessage
			if err := json.Unmarshal(body, &items); err != nil {
				return nil, err
			}
			vals := make([]ref.Val, len(items))
			for i, item := range items {
				v, err := decodeValue(item)
				if err != nil {
					return nil, err
				}
				vals[i] = v.(ref.Val)
			}
			return types.NewRefValList(types.DefaultTypeAdapter, vals), nil
		case "map":
			var entries [][2]json.RawMessage
			if err := json.Unmarshal(body, &entries); err != nil {
				return nil, err
			}
			m := map[ref.Val]ref.Val{}
			for _, e := range entries {
				k, err := decodeValue(e[0])
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(e[1])
				if err != nil {
					return nil, err
				}
				m[k.(ref.Val)] = v.(ref.Val)
			}
			return types.NewRefValMap(types.DefaultTypeAdapter, m), nil
		case "quantity":
			q, err := resource.ParseQuantity(s)
			return apiservercel.Quantity{Quantity: &q}, err
		case "semver":
			v, err := semver.Parse(s)
			return apiservercel.Semver{Version: v}, err
		case "timestamp_ns":
			ns, ok := new(big.Int).SetString(s, 10)
			if !ok {
				return nil, fmt.Errorf("bad timestamp_ns %q", s)
			}
			sec, nsec := new(big.Int).DivMod(ns, big.NewInt(1e9), new(big.Int))
			return types.Timestamp{Time: time.Unix(sec.Int64(), nsec.Int64()).UTC()}, nil
		case "duration":
			d, err := time.ParseDuration(s)
			return types.Duration{Duration: d}, err
		}
		return nil, fmt.Errorf("unknown tag %q", tag)
	}
	return nil, nil
}

func encodeValue(v ref.Val) any {
	switch t := v.(type) {
	case types.Int:
		return map[string]any{"int": strconv.FormatInt(int64(t), 10)}
	case types.Uint:
		return map[string]any{"uint": strconv.FormatUint(uint64(t), 10)}
	case types.Double:
		f := float64(t)
		switch {
		case math.IsNaN(f):
			return map[string]any{"double": "nan"}
		case math.IsInf(f, 1):
			return map[string]any{"double": "inf"}
		case math.IsInf(f, -1):
			return map[string]any{"double": "-inf"}
		}
		return map[string]any{"double": strconv.FormatFloat(f, 'g', -1, 64)}
	case types.String:
		return map[string]any{"string": string(t)}
	case types.Bytes:
		return map[string]any{"bytes_b64": base64.StdEncoding.EncodeToString([]byte(t))}
	case types.Bool:
		return map[string]any{"bool": bool(t)}
	case types.Null:
		return map[string]any{"null": nil}
	case types.Timestamp:
		ns := new(big.Int).Mul(big.NewInt(t.Time.Unix()), big.NewInt(1e9))
		ns.Add(ns, big.NewInt(int64(t.Time.Nanosecond())))
		return map[string]any{"timestamp_ns": ns.String()}
	case types.Duration:
		return map[string]any{"duration": strconv.FormatInt(int64(t.Duration), 10) + "ns"}
	case *types.Optional:
		if !t.HasValue() {
			return map[string]any{"optional": nil}
		}
		return map[string]any{"optional": encodeValue(t.GetValue())}
	case *types.Type:
		return map[string]any{"type": t.TypeName()}
	case apiservercel.Quantity:
		return map[string]any{"quantity": t.Quantity.String()}
	case apiservercel.Semver:
		return map[string]any{"semver": t.Version.String()}
	case apiservercel.URL:
		return map[string]any{"url": t.URL.String()}
	case apiservercel.IP:
		return map[string]any{"ip": t.Addr.String()}
	case apiservercel.CIDR:
		return map[string]any{"cidr": t.Prefix.String()}
	case traits.Lister:
		items := []any{}
		for it := t.Iterator(); it.HasNext() == types.True; {
			items = append(items, encodeValue(it.Next()))
		}
		return map[string]any{"list": items}
	case traits.Mapper:
		entries := [][2]any{}
		for it := t.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			entries = append(entries, [2]any{encodeValue(k), encodeValue(t.Get(k))})
		}
		return map[string]any{"map": entries}
	}
	return map[string]any{"other": fmt.Sprintf("%T %v", v, v.Value())}
}
