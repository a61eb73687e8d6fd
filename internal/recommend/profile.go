package recommend

import (
	"math"
	"time"
)

// profileHours is the number of buckets of a daily profile: one per hour of
// the day (UTC).
const profileHours = 24

// daySeconds is the length of a profile's day.
const daySeconds = 24 * 60 * 60

// dailyProfile remembers, for each hour of the day, the highest value seen
// in that hour on past days, fading by a factor each day: a peak that
// recurs every day is refreshed before it fades, a one-off one is
// forgotten in a few days. It costs a fixed 112 bytes whatever the
// history.
type dailyProfile struct {
	peaks [profileHours]float32
	// day is the day (Unix seconds / daySeconds) of the newest value folded
	// in; 0 for an empty profile.
	day int64
	// days counts the day boundaries crossed with values on both sides,
	// up to maxProfileDays: how many days of pattern the profile has seen.
	days float32
}

// maxProfileDays caps the count of days seen; confidence saturates long
// before.
const maxProfileDays = 1000

// add records v at t. A day boundary first fades every hour by fade per
// day elapsed. A value from an earlier day than the newest is folded into
// its hour as it stands: it only makes the profile higher.
func (p *dailyProfile) add(v float64, t time.Time, fade float64) {
	day, h := dayAndHour(t)
	switch {
	case p.day == 0:
		p.day = day
	case day > p.day:
		f := float32(math.Pow(fade, float64(day-p.day)))
		for i := range p.peaks {
			p.peaks[i] *= f
		}
		p.days = min(p.days+1, maxProfileDays)
		p.day = day
	}
	if f := float32(v); f > p.peaks[h] {
		p.peaks[h] = f
	}
}

// predict is the highest value the profile holds for the hours from
// behind hours before now's to ahead hours after it.
func (p *dailyProfile) predict(now time.Time, behind, ahead int) float64 {
	if p.day == 0 {
		return 0
	}
	_, h := dayAndHour(now)
	var m float32
	for i := -behind; i <= ahead; i++ {
		if b := p.peaks[(h+i+2*profileHours)%profileHours]; b > m {
			m = b
		}
	}
	return float64(m)
}

func (p *dailyProfile) empty() bool { return p.day == 0 }

// dayAndHour returns t's day (Unix seconds / daySeconds, rounded down) and
// hour of that day, UTC.
func dayAndHour(t time.Time) (int64, int) {
	sec := t.Unix()
	day := sec / daySeconds
	if sec%daySeconds < 0 {
		day--
	}
	return day, int((sec - day*daySeconds) / 3600)
}
