package sessionconfig

import "flag"

// Flags are the knobs as flags of one command line.
type Flags struct {
	given map[string]*flagValue
}

// AddFlags defines a flag for every knob on fs, named by Knob.Flag. After
// fs.Parse, Over reads them.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{given: map[string]*flagValue{}}
	for _, k := range Knobs() {
		v := &flagValue{bool: k.Bool}
		fs.Var(v, k.Flag, k.Usage+" [$"+k.Env+"]")
		f.given[k.Env] = v
	}
	return f
}

// Over is a Lookup in which a flag given on the command line wins and
// next answers for the others.
func (f *Flags) Over(next Lookup) Lookup {
	return func(k Knob) (string, string) {
		if v := f.given[k.Env]; v != nil && v.set {
			return v.value, "--" + k.Flag
		}
		return next(k)
	}
}

// flagValue keeps a flag's raw text: parsing is Load's, the same for every
// source.
type flagValue struct {
	value string
	set   bool
	bool  bool
}

func (v *flagValue) String() string {
	if v == nil {
		return ""
	}
	return v.value
}

func (v *flagValue) Set(s string) error {
	v.value, v.set = s, true
	return nil
}

// IsBoolFlag lets a bool knob's flag stand alone (--internet).
func (v *flagValue) IsBoolFlag() bool { return v.bool }
