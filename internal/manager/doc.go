// Package manager wires tailor's controller-runtime manager: the scheme, the
// pod index, the metrics source, the actuator and the TailorPolicy
// controller. The `tailor manager` verb, the e2e suite and the reaction
// benchmark all start the same manager through it, so what is tested is what
// runs.
package manager
