package main

// The stand-in's plan-time behaviour (Check, Diff), which decides whether a step runs again.
// What it does over SSH is proven by the E2E tier on the dev VMs.

import (
	"context"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"
)

const urn = "urn:pulumi:dev::nodefleet::command:remote:Command::step"

func props(t *testing.T, m resource.PropertyMap) *structpb.Struct {
	t.Helper()
	s, err := plugin.MarshalProperties(m, plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func inputs(create, trigger string) resource.PropertyMap {
	return resource.PropertyMap{
		"connection": resource.MakeSecret(resource.NewObjectProperty(resource.PropertyMap{
			"host":       resource.NewStringProperty("127.0.0.1"),
			"privateKey": resource.NewStringProperty("KEY"),
		})),
		"create":   resource.NewStringProperty(create),
		"stdin":    resource.NewStringProperty("echo hi"),
		"triggers": resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty(trigger)}),
	}
}

func diff(t *testing.T, olds, news resource.PropertyMap) *pulumirpc.DiffResponse {
	t.Helper()
	r, err := (&provider{}).Diff(context.Background(), &pulumirpc.DiffRequest{Urn: urn, OldInputs: props(t, olds), Olds: props(t, olds), News: props(t, news)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDiffNothingChangedRunsNothing(t *testing.T) {
	r := diff(t, inputs("/bin/sh -s", "a"), inputs("/bin/sh -s", "a"))
	if r.Changes != pulumirpc.DiffResponse_DIFF_NONE || len(r.Replaces) != 0 {
		t.Fatalf("want no change, got %v replaces %v", r.Changes, r.Replaces)
	}
}

func TestDiffTriggersReplace(t *testing.T) {
	r := diff(t, inputs("/bin/sh -s", "a"), inputs("/bin/sh -s", "b"))
	if r.Changes != pulumirpc.DiffResponse_DIFF_SOME || len(r.Replaces) != 1 || r.Replaces[0] != "triggers" {
		t.Fatalf("want a replacement on triggers, got %v replaces %v", r.Changes, r.Replaces)
	}
	if r.DetailedDiff["triggers"].Kind != pulumirpc.PropertyDiff_UPDATE_REPLACE {
		t.Fatalf("triggers diff kind %v", r.DetailedDiff["triggers"].Kind)
	}
}

func TestDiffOtherInputsUpdateInPlace(t *testing.T) {
	r := diff(t, inputs("/bin/sh -s", "a"), inputs("sudo -n /bin/sh -s", "a"))
	if r.Changes != pulumirpc.DiffResponse_DIFF_SOME || len(r.Replaces) != 0 || r.Diffs[0] != "create" {
		t.Fatalf("want an in-place update of create, got %v replaces %v diffs %v", r.Changes, r.Replaces, r.Diffs)
	}
}

func TestDiffUnknownInputIsAChange(t *testing.T) {
	news := inputs("/bin/sh -s", "a")
	news["stdin"] = resource.MakeComputed(resource.NewStringProperty(""))
	if r := diff(t, inputs("/bin/sh -s", "a"), news); r.Changes != pulumirpc.DiffResponse_DIFF_SOME {
		t.Fatalf("an unknown input must count as a change, got %v", r.Changes)
	}
}

func TestDiffIgnoresOutputsInOlds(t *testing.T) {
	olds := inputs("/bin/sh -s", "a")
	withOutputs := olds.Copy()
	withOutputs["stdout"] = resource.NewStringProperty("previous output")
	r, err := (&provider{}).Diff(context.Background(), &pulumirpc.DiffRequest{Urn: urn, Olds: props(t, withOutputs), News: props(t, olds)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Changes != pulumirpc.DiffResponse_DIFF_NONE {
		t.Fatalf("stdout is an output, not an input: got %v %v", r.Changes, r.Diffs)
	}
}

func TestCheckFillsDefaultsAndKeepsSecrets(t *testing.T) {
	r, err := (&provider{}).Check(context.Background(), &pulumirpc.CheckRequest{Urn: urn, News: props(t, inputs("/bin/sh -s", "a"))})
	if err != nil || len(r.Failures) != 0 {
		t.Fatalf("check: %v %v", err, r.GetFailures())
	}
	got, err := plugin.UnmarshalProperties(r.Inputs, plugin.MarshalOptions{KeepSecrets: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got["connection"].IsSecret() {
		t.Fatal("the connection must stay a secret")
	}
	conn := got["connection"].SecretValue().Element.ObjectValue()
	if conn["port"].NumberValue() != 22 || conn["user"].StringValue() != "root" || conn["dialErrorLimit"].NumberValue() != 10 {
		t.Fatalf("defaults not filled: %v", conn)
	}
	if !got["addPreviousOutputInEnv"].BoolValue() {
		t.Fatal("addPreviousOutputInEnv defaults to true")
	}
}

func TestCheckRefusesWhatItDoesNotImplement(t *testing.T) {
	news := inputs("/bin/sh -s", "a")
	news["logging"] = resource.NewStringProperty("loud")
	conn := news["connection"].SecretValue().Element.ObjectValue()
	conn["proxy"] = resource.NewObjectProperty(resource.PropertyMap{"host": resource.NewStringProperty("jump")})
	r, err := (&provider{}).Check(context.Background(), &pulumirpc.CheckRequest{Urn: urn, News: props(t, news)})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, f := range r.Failures {
		found[f.Property] = true
	}
	if !found["logging"] || !found["connection.proxy"] {
		t.Fatalf("want failures for logging and connection.proxy, got %v", r.Failures)
	}
	if _, err := (&provider{}).Check(context.Background(), &pulumirpc.CheckRequest{Urn: "urn:pulumi:dev::p::command:local:Command::x", News: props(t, news)}); err == nil {
		t.Fatal("command:local must be refused")
	}
}
