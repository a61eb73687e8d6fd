// Package softmax decides where a JVM's soft heap bound (SoftMaxHeapSize,
// honoured by ZGC and Shenandoah) should sit under its container's memory
// limit: the limit, less what the JVM measurably holds outside its heap,
// less a stated headroom, never above the heap's maximum. It is pure: the
// node agent reads the figures and sets the flag (internal/jvm/attach).
//
// A soft bound is what the collector aims at, not a wall: a heap whose
// live set outgrows it still grows, up to -Xmx. So the bound makes a raised
// limit usable (the collector lets the heap grow into it instead of
// collecting at the old size) and a lowered one safer (the collector works
// to keep the heap inside it), but it cannot make a limit under the live
// set safe: tailor's decision keeps the limit above what the heap may reach
// for that (internal/jvm.Reach).
package softmax
