// Package metricstest reads a Prometheus scrape for tests: the samples a real
// /metrics answer carries, parsed by the Prometheus text parser.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of a scrape.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
	Type   dto.MetricType
}

func (s Sample) String() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, s.Labels[k])
	}
	return fmt.Sprintf("%s{%s} %g", s.Name, strings.Join(parts, ","), s.Value)
}

// Scrape is a parsed scrape.
type Scrape []Sample

// Get scrapes url (a real listener).
func Get(t testing.TB, url string) Scrape {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scrape %s: %d %s", url, resp.StatusCode, b)
	}
	return parse(t, resp.Body)
}

// Serve scrapes handler in-process.
func Serve(t testing.TB, h http.Handler) Scrape {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	return parse(t, rec.Body)
}

func parse(t testing.TB, r io.Reader) Scrape {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	var out Scrape
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s := Sample{Name: name, Labels: labels, Type: f.GetType()}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.Value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.Value = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_SUMMARY:
				s.Value = float64(m.GetSummary().GetSampleCount())
			default:
				s.Value = m.GetUntyped().GetValue()
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// Find returns the samples named name whose labels include every pair in
// labels ("k", "v", ...). A histogram's value is its count.
func (s Scrape) Find(name string, labels ...string) Scrape {
	var out Scrape
	for _, x := range s {
		if x.Name != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(labels); i += 2 {
			if x.Labels[labels[i]] != labels[i+1] {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, x)
		}
	}
	return out
}

// Value is the value of the one sample name{labels}; it fails the test when
// there is not exactly one.
func (s Scrape) Value(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	got := s.Find(name, labels...)
	if len(got) != 1 {
		t.Fatalf("want one sample %s %v, got %d: %v\nscrape has:\n%s", name, labels, len(got), got, s.Names())
	}
	return got[0].Value
}

// Names lists the metric names present, for failure messages.
func (s Scrape) Names() string {
	seen := map[string]bool{}
	var names []string
	for _, x := range s {
		if !seen[x.Name] {
			seen[x.Name] = true
			names = append(names, x.Name)
		}
	}
	return strings.Join(names, "\n")
}
