// Package nsrulestest makes random LimitRanges, ResourceQuotas and pods that
// the apiserver accepts as objects, for nsrules' property test and for the
// oracle that checks nsrules against a real apiserver's admission.
package nsrulestest
