package jvm

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// OptionEdit is the change to a container's spec that starts its JVM with
// another heap option: the one list or variable that changes, the others
// nil. Command and Args are whole lists, as a strategic-merge patch
// replaces them; Env is the one variable, which such a patch merges by
// name.
type OptionEdit struct {
	Command, Args []string
	Env           *corev1.EnvVar
}

// SetOption is the edit of c that has its JVM start with option in place
// of the one that sets its heap's maximum (or its share of the limit), in
// the place the spec holds that one: its command, its arguments (within a
// shell's line as well) or the option variable. A JVM whose heap takes the
// default share, with no option for it anywhere, gets option added to
// JAVA_TOOL_OPTIONS, which the JVM reads whatever starts it. It fails where
// the spec cannot carry it: a JVM the spec does not show (a script that
// starts it), or options from an object the spec does not hold; and it
// checks its own work: the edited spec reads back (HeapOf) as option.
func SetOption(c *corev1.Container, option string) (OptionEdit, error) {
	h, at := heapOf(c)
	switch {
	case !h.JVM:
		return OptionEdit{}, fmt.Errorf("container %s: the spec does not show how its JVM starts (a script?): set %s where its options are", c.Name, option)
	case h.Unknown != "":
		return OptionEdit{}, fmt.Errorf("container %s: its JVM's options come from %s, which the spec does not hold: set %s there", c.Name, h.Unknown, option)
	}
	var edit OptionEdit
	switch {
	case at == nil:
		e := corev1.EnvVar{Name: before[0], Value: option}
		if i := envIndex(c, before[0]); i >= 0 {
			e.Value = c.Env[i].Value + " " + option
		}
		edit.Env = &e
	case at.env != "":
		e := c.Env[at.index]
		e.Value = e.Value[:at.start] + option + e.Value[at.end:]
		edit.Env = &e
	default:
		list := c.Command
		if at.field == "args" {
			list = c.Args
		}
		list = append([]string(nil), list...)
		s := list[at.index]
		list[at.index] = s[:at.start] + option + s[at.end:]
		if at.field == "args" {
			edit.Args = list
		} else {
			edit.Command = list
		}
	}
	if got := HeapOf(edit.Apply(c)); got.Option != option {
		return OptionEdit{}, fmt.Errorf("container %s: %s written into its spec reads back as %q", c.Name, option, got.Option)
	}
	return edit, nil
}

// Apply is c with the edit made, in a copy.
func (e OptionEdit) Apply(c *corev1.Container) *corev1.Container {
	out := c.DeepCopy()
	if e.Command != nil {
		out.Command = e.Command
	}
	if e.Args != nil {
		out.Args = e.Args
	}
	if e.Env != nil {
		if i := envIndex(out, e.Env.Name); i >= 0 {
			out.Env[i] = *e.Env
		} else {
			out.Env = append(out.Env, *e.Env)
		}
	}
	return out
}
