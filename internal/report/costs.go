package report

// Cost is a monthly cost now and at the recommendation, of a workload, a
// namespace or the whole report.
type Cost struct {
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Workload  string `json:"workload,omitempty"`
	// MonthlyCostBefore and MonthlyCostAfter sum the rows';
	// MonthlyCostFreed is their difference, negative where the
	// recommendation asks for more.
	MonthlyCostBefore float64 `json:"monthlyCostBefore"`
	MonthlyCostAfter  float64 `json:"monthlyCostAfter"`
	MonthlyCostFreed  float64 `json:"monthlyCostFreed"`
}

func (c *Cost) add(r Row) {
	c.MonthlyCostBefore += r.MonthlyCostBefore
	c.MonthlyCostAfter += r.MonthlyCostAfter
	c.MonthlyCostFreed = c.MonthlyCostBefore - c.MonthlyCostAfter
}

// Costs sums rows per workload and per namespace, in the rows' order, and
// over all of them.
func Costs(rows []Row) (workloads, namespaces []Cost, total Cost) {
	wi, ni := map[string]int{}, map[string]int{}
	for _, r := range rows {
		wk := r.Namespace + "/" + r.Kind + "/" + r.Workload
		i, ok := wi[wk]
		if !ok {
			i = len(workloads)
			wi[wk] = i
			workloads = append(workloads, Cost{Namespace: r.Namespace, Kind: r.Kind, Workload: r.Workload})
		}
		workloads[i].add(r)
		j, ok := ni[r.Namespace]
		if !ok {
			j = len(namespaces)
			ni[r.Namespace] = j
			namespaces = append(namespaces, Cost{Namespace: r.Namespace})
		}
		namespaces[j].add(r)
		total.add(r)
	}
	return workloads, namespaces, total
}
