package rules

import (
	"strings"
	"testing"
)

func TestSelectorsMatchLikeKubernetes(t *testing.T) {
	labels := map[string]string{"app": "db", "tier": "cache", "n": "5", "example.com/team": "a"}
	for sel, want := range map[string]bool{
		"":                               true,
		"app":                            true,
		"!app":                           false,
		"!missing":                       true,
		"app=db":                         true,
		"app==db":                        true,
		"app!=db":                        false,
		"missing!=db":                    true,
		"app=db,tier=cache":              true,
		"app=db,tier=web":                false,
		"tier in (web, cache)":           true,
		"tier notin (web,cache)":         false,
		"missing notin (a)":              true,
		"n>4":                            true,
		"n<5":                            false,
		"app>1":                          false,
		"example.com/team=a":             true,
		" app = db , tier in (x,cache) ": true,
	} {
		s, err := ParseSelector(sel)
		if err != nil {
			t.Errorf("%q: %v", sel, err)
			continue
		}
		if got := s.Matches(labels); got != want {
			t.Errorf("%q matches = %v, want %v", sel, got, want)
		}
	}
}

func TestBadSelectorsAreNamed(t *testing.T) {
	for sel, want := range map[string]string{
		"app=db,":                        "empty requirement",
		"tier in (a":                     "unbalanced '('",
		"a)":                             "unbalanced ')'",
		"tier in ()":                     "needs at least one value",
		"tier within (a)":                "expected one of",
		"n>x":                            "needs an integer",
		"-bad=x":                         "not a valid label key",
		"Bad_Prefix/x=y":                 "must be a DNS subdomain",
		"app=" + strings.Repeat("v", 64): "not a valid label value",
		"a b":                            "expected one of",
	} {
		_, err := ParseSelector(sel)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", sel, err, want)
		}
	}
}

func none(string) bool { return false }

func TestReportsAreCheckedAsTheHostDoes(t *testing.T) {
	ok := CheckReport(
		[]Result{{"NamespaceMissing", "m"}},
		[]Condition{{"example.com/Synced", "True", "Done", "d"}},
		[]Entry{{"example.com/zone", `"eu"`}},
		none, DefaultBounds)
	if ok != nil {
		t.Fatal(ok)
	}
	cases := []struct {
		r    []Result
		c    []Condition
		e    []Entry
		in   func(string) bool
		want string
	}{
		{r: []Result{{"", "m"}}, want: "report.results[0].reason is empty"},
		{r: []Result{{"not camel", "m"}}, want: "is not a valid reason"},
		{r: []Result{{"Trailing:", "m"}}, want: "is not a valid reason"},
		{c: []Condition{{"Ready", "true", "R", ""}}, want: `report.conditions[0].status is "true"`},
		{c: []Condition{{"bad type!", "True", "R", ""}}, want: "not a valid condition type"},
		{c: []Condition{{"Ready", "True", "R", strings.Repeat("x", MaxConditionMessage+1)}}, want: "Kubernetes accepts at most"},
		{e: []Entry{{"k k", "1"}}, want: "not a valid context key"},
		{e: []Entry{{"k", "1"}, {"k", "2"}}, want: "set twice"},
		{e: []Entry{{"k", "1"}}, in: func(k string) bool { return k == "k" }, want: "already set by an earlier step"},
		{e: []Entry{{"k", "not json"}}, want: "not valid JSON"},
		{r: make([]Result, 33), want: "report.results has 33 entries"},
		{r: []Result{{"R", strings.Repeat("x", 70000)}}, want: "over the limit of 65536 bytes"},
	}
	for i, c := range cases {
		if c.in == nil {
			c.in = none
		}
		for j := range c.r {
			if c.r[j].Reason == "" && c.want != "report.results[0].reason is empty" {
				c.r[j].Reason = "R"
			}
		}
		err := CheckReport(c.r, c.c, c.e, c.in, DefaultBounds)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		}
	}
}
