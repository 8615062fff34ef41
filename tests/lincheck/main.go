// lincheck: whether a history of single-key register operations (read, write,
// compare-and-set) is linearizable, checked with porcupine against a sequential register per
// key. Reads a history as tab-separated lines from stdin or the file named by the argument:
//
//	client op key value expected call_ns return_ns out status
//
// op is r, w or c; status is ok, fail (a compare-and-set that found another value) or
// unknown (no answer: the operation may or may not have taken effect; return_ns is ignored).
// out is the value a read returned. Prints a summary line; exit status 0 if linearizable,
// 1 if not, 2 on bad input, 3 if the check timed out.
package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type input struct {
	op       byte
	key      int
	value    int
	expected int
}

type output struct {
	value  int
	status string
}

func parse(r io.Reader) ([]porcupine.Operation, error) {
	var ops []porcupine.Operation
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Split(text, "\t")
		if len(f) != 9 {
			return nil, fmt.Errorf("line %d: %d fields, want 9", line, len(f))
		}
		n := make([]int64, 8)
		for i, idx := range []int{0, 2, 3, 4, 5, 6, 7} {
			v, err := strconv.ParseInt(f[idx], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: field %d: %v", line, idx+1, err)
			}
			n[i] = v
		}
		if len(f[1]) != 1 || !strings.Contains("rwc", f[1]) {
			return nil, fmt.Errorf("line %d: op %q", line, f[1])
		}
		status := f[8]
		if status != "ok" && status != "fail" && status != "unknown" {
			return nil, fmt.Errorf("line %d: status %q", line, status)
		}
		ret := n[5]
		if status == "unknown" {
			ret = math.MaxInt64
		}
		ops = append(ops, porcupine.Operation{
			ClientId: int(n[0]),
			Input:    input{f[1][0], int(n[1]), int(n[2]), int(n[3])},
			Call:     n[4],
			Output:   output{int(n[6]), status},
			Return:   ret,
		})
	}
	return ops, sc.Err()
}

var register = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		var keys []int
		for _, op := range history {
			k := op.Input.(input).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return 0 },
	Step: func(state, in, out interface{}) (bool, interface{}) {
		s, i, o := state.(int), in.(input), out.(output)
		switch i.op {
		case 'r':
			return o.status == "unknown" || o.value == s, s
		case 'w':
			return true, i.value
		default: // compare-and-set
			if o.status == "unknown" {
				if s == i.expected {
					return true, i.value
				}
				return true, s
			}
			if o.status == "ok" {
				return s == i.expected, i.value
			}
			return s != i.expected, s
		}
	},
	Equal: func(a, b interface{}) bool { return a.(int) == b.(int) },
}

func main() {
	var r io.Reader = os.Stdin
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		r = f
	}
	ops, err := parse(r)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lincheck:", err)
		os.Exit(2)
	}
	res := porcupine.CheckOperationsTimeout(register, ops, 5*time.Minute)
	switch res {
	case porcupine.Ok:
		fmt.Printf("linearizable: %d operations\n", len(ops))
	case porcupine.Illegal:
		fmt.Printf("NOT linearizable: %d operations\n", len(ops))
		os.Exit(1)
	default:
		fmt.Printf("unknown (timed out): %d operations\n", len(ops))
		os.Exit(3)
	}
}
