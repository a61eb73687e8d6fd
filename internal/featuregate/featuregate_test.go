package featuregate

import "testing"

func TestFeatureGateFrom(t *testing.T) {
	page := []byte(`# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="InPlacePodVerticalScaling",stage=""} 1
kubernetes_feature_enabled{name="InPlacePodVerticalScalingSchedulerPreemption",stage="ALPHA"} 0
kubernetes_feature_enabled{name="OnGate",stage="ALPHA"} 1
`)
	for gate, want := range map[string]Gate{
		"InPlacePodVerticalScalingSchedulerPreemption": {Known: true, Enabled: false},
		"OnGate":     {Known: true, Enabled: true},
		"NoSuchGate": {Known: false},
	} {
		got := gateFrom(page, gate)
		if got.Known != want.Known || got.Enabled != want.Enabled || !got.Answered || got.Why == "" {
			t.Errorf("%s: %+v, want known %v enabled %v", gate, got, want.Known, want.Enabled)
		}
	}
	// A page that leaves the TYPE out has the gate untyped.
	if got := gateFrom([]byte(`kubernetes_feature_enabled{name="OnGate",stage="ALPHA"} 1`+"\n"), "OnGate"); !got.Known || !got.Enabled {
		t.Errorf("untyped: %+v, want known and enabled", got)
	}
	if got := gateFrom([]byte("not { metrics"), "OnGate"); got.Known || got.Answered || got.Why == "" {
		t.Errorf("garbage: %+v, want unknown with a reason", got)
	}
}
