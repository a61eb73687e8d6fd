package limits_test

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailorhq/tailor/api/v1alpha1"
	"github.com/tailorhq/tailor/internal/autoscale/lowering/limits"
)

func window(schedule, zone string, d time.Duration) v1alpha1.ChangeWindow {
	w := v1alpha1.ChangeWindow{Schedule: schedule, Duration: metav1.Duration{Duration: d}}
	if zone != "" {
		w.TimeZone = &zone
	}
	return w
}

func limitsOf(t *testing.T, windows ...v1alpha1.ChangeWindow) limits.Config {
	t.Helper()
	spec := &v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Windows: windows}}}
	l, _, err := limits.ConfigOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestChangeWindowOpen: a window is open from each opening its schedule
// names for its duration of elapsed time, in its time zone; when none is
// open, the next opening is named.
func TestChangeWindowOpen(t *testing.T) {
	nightly := window("0 22 * * *", "", 2*time.Hour)
	cases := map[string]struct {
		windows  []v1alpha1.ChangeWindow
		at       string
		wantOpen bool
		wantNext string
	}{
		"no window: always open": {at: "2026-11-26T12:00:00Z", wantOpen: true},
		"a minute before it opens": {
			windows: []v1alpha1.ChangeWindow{nightly}, at: "2026-11-26T21:59:00Z", wantNext: "2026-11-26T22:00:00Z",
		},
		"the second it opens": {windows: []v1alpha1.ChangeWindow{nightly}, at: "2026-11-26T22:00:00Z", wantOpen: true},
		"its last second":     {windows: []v1alpha1.ChangeWindow{nightly}, at: "2026-11-26T23:59:59Z", wantOpen: true},
		"closed at its end exactly": {
			windows: []v1alpha1.ChangeWindow{nightly}, at: "2026-11-27T00:00:00Z", wantNext: "2026-11-27T22:00:00Z",
		},
		"spanning midnight: open the next morning": {
			windows: []v1alpha1.ChangeWindow{window("0 23 * * *", "", 3*time.Hour)}, at: "2026-11-27T01:30:00Z", wantOpen: true,
		},
		"spanning midnight: closed after it": {
			windows: []v1alpha1.ChangeWindow{window("0 23 * * *", "", 3*time.Hour)}, at: "2026-11-27T02:00:00Z", wantNext: "2026-11-27T23:00:00Z",
		},
		"weekdays: Friday night's window runs into Saturday": {
			windows: []v1alpha1.ChangeWindow{window("0 22 * * 1-5", "", 4*time.Hour)}, at: "2026-11-28T01:00:00Z", wantOpen: true,
		},
		"weekdays: closed on Saturday night, next on Monday": {
			windows: []v1alpha1.ChangeWindow{window("0 22 * * 1-5", "", 4*time.Hour)}, at: "2026-11-28T23:00:00Z", wantNext: "2026-11-30T22:00:00Z",
		},
		"a time zone: 02:00 in Berlin is 01:00 UTC in winter": {
			windows: []v1alpha1.ChangeWindow{window("0 2 * * *", "Europe/Berlin", time.Hour)}, at: "2026-11-26T01:30:00Z", wantOpen: true,
		},
		"a time zone: 02:00 in Berlin is 00:00 UTC in summer": {
			windows: []v1alpha1.ChangeWindow{window("0 2 * * *", "Europe/Berlin", time.Hour)}, at: "2026-07-01T01:30:00Z", wantNext: "2026-07-02T00:00:00Z",
		},
		// 2027-03-14 02:00 EST the clocks go to 03:00 EDT. A window's
		// duration is elapsed time: the one opened at 01:00 EST (06:00
		// UTC) lasts 2h, to 03:00... EDT 04:00, 08:00 UTC.
		"DST forward: a window open across the change lasts its elapsed duration": {
			windows: []v1alpha1.ChangeWindow{window("0 1 * * *", "America/New_York", 2*time.Hour)}, at: "2027-03-14T07:59:59Z", wantOpen: true,
		},
		"DST forward: and closes after it": {
			windows: []v1alpha1.ChangeWindow{window("0 1 * * *", "America/New_York", 2*time.Hour)}, at: "2027-03-14T08:00:00Z", wantNext: "2027-03-15T05:00:00Z",
		},
		// 02:30 does not exist that day: as a CronJob, the window does not
		// open that day, and opens at 02:30 EDT the next.
		"DST forward: an opening at a wall-clock time that does not exist is skipped that day": {
			windows: []v1alpha1.ChangeWindow{window("30 2 * * *", "America/New_York", 30*time.Minute)}, at: "2027-03-14T06:00:00Z", wantNext: "2027-03-15T06:30:00Z",
		},
		// 2026-11-01 02:00 EDT the clocks go back to 01:00 EST: 01:00
		// happens twice, and so does the opening.
		"DST back: the first 01:00 (EDT)": {
			windows: []v1alpha1.ChangeWindow{window("0 1 * * *", "America/New_York", 30*time.Minute)}, at: "2026-11-01T05:10:00Z", wantOpen: true,
		},
		"DST back: between the two 01:00s": {
			windows: []v1alpha1.ChangeWindow{window("0 1 * * *", "America/New_York", 30*time.Minute)}, at: "2026-11-01T05:40:00Z", wantNext: "2026-11-01T06:00:00Z",
		},
		"DST back: the second 01:00 (EST)": {
			windows: []v1alpha1.ChangeWindow{window("0 1 * * *", "America/New_York", 30*time.Minute)}, at: "2026-11-01T06:10:00Z", wantOpen: true,
		},
		"two windows: open when either is": {
			windows: []v1alpha1.ChangeWindow{nightly, window("0 6 * * *", "", time.Hour)}, at: "2026-11-26T06:30:00Z", wantOpen: true,
		},
		"two windows: the sooner opening is named": {
			windows: []v1alpha1.ChangeWindow{nightly, window("0 6 * * *", "", time.Hour)}, at: "2026-11-26T12:00:00Z", wantNext: "2026-11-26T22:00:00Z",
		},
		"overlapping openings: every minute for 5m is always open": {
			windows: []v1alpha1.ChangeWindow{window("* * * * *", "", 5*time.Minute)}, at: "2026-11-26T12:34:56Z", wantOpen: true,
		},
		"a schedule that never comes: closed, no next": {
			windows: []v1alpha1.ChangeWindow{window("0 0 30 2 *", "", time.Hour)}, at: "2026-11-26T12:00:00Z",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			open, next, _ := limitsOf(t, tc.windows...).Open(utc(tc.at))
			gotNext := ""
			if !next.IsZero() {
				gotNext = next.UTC().Format(time.RFC3339)
			}
			if open != tc.wantOpen || gotNext != tc.wantNext {
				t.Errorf("at %s: open %v, next %q; want open %v, next %q", tc.at, open, gotNext, tc.wantOpen, tc.wantNext)
			}
		})
	}
}

// TestChangeWindowRefused: what the CRD's rules cannot judge is refused with
// a message that says what to change.
func TestChangeWindowRefused(t *testing.T) {
	cases := map[string]struct {
		window v1alpha1.ChangeWindow
		want   string
	}{
		"an unknown time zone":    {window("0 22 * * *", "Mars/Olympus", time.Hour), `timeZone "Mars/Olympus" is not a time zone`},
		"a minute out of range":   {window("61 22 * * *", "", time.Hour), `schedule "61 22 * * *" is not a cron schedule`},
		"six fields":              {window("0 0 22 * * *", "", time.Hour), `is not a cron schedule`},
		"a CRON_TZ prefix":        {window("CRON_TZ=UTC 0 22 * * *", "", time.Hour), "set the time zone in timeZone"},
		"@every is no window":     {window("@every 1h", "", time.Hour), "set the time zone in timeZone and use five cron fields"},
		"no duration":             {window("0 22 * * *", "", 0), "duration must be positive"},
		"a day-of-week name, ok":  {window("0 22 * * MON-FRI", "", time.Hour), ""},
		"a descriptor, ok":        {window("@daily", "Asia/Tokyo", time.Hour), ""},
		"an offset zone name, ok": {window("0 3 * * *", "Etc/GMT+5", time.Hour), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Windows: []v1alpha1.ChangeWindow{window("@hourly", "", time.Minute), tc.window}}}}
			_, _, err := limits.ConfigOf(spec)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "behavior.scaleDown.windows[1]")):
				t.Errorf("error %v, want one about windows[1] saying %q", err, tc.want)
			}
		})
	}
}

// TestLoweringBudgetRounding: a percent of the running pods is rounded up,
// so a small workload still lowers one pod an hour; a count stands as it
// is, both at most 1000.
func TestLoweringBudgetRounding(t *testing.T) {
	cases := map[string]struct {
		pods intstr.IntOrString
		n    int
		want int
	}{
		"a count":                       {intstr.FromInt32(2), 10, 2},
		"a count above the pods":        {intstr.FromInt32(5), 3, 5},
		"a count above the cap":         {intstr.FromInt32(5000), 10, 1000},
		"10% of 5 pods: one, not zero":  {intstr.FromString("10%"), 5, 1},
		"10% of 25 pods: 2.5 up to 3":   {intstr.FromString("10%"), 25, 3},
		"10% of 30 pods: exactly 3":     {intstr.FromString("10%"), 30, 3},
		"100% of 3 pods":                {intstr.FromString("100%"), 3, 3},
		"1% of no pods: still one":      {intstr.FromString("1%"), 0, 1},
		"50% of 5000 pods: at the cap":  {intstr.FromString("50%"), 5000, 1000},
		"33% of 100 pods: exactly 33":   {intstr.FromString("33%"), 100, 33},
		"33% of 101 pods: 33.33 up, 34": {intstr.FromString("33%"), 101, 34},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := &v1alpha1.TailorPolicySpec{Behavior: &v1alpha1.Behavior{ScaleDown: &v1alpha1.ScaleDownRules{Budget: &v1alpha1.LoweringBudget{Pods: &tc.pods}}}}
			l, limited, err := limits.ConfigOf(spec)
			if err != nil || !limited {
				t.Fatalf("LoweringLimitsOf: %v, limited %v", err, limited)
			}
			if got := l.Budget(tc.n); got != tc.want {
				t.Errorf("budget of %s over %d pods: %d, want %d", tc.pods.String(), tc.n, got, tc.want)
			}
		})
	}
}
