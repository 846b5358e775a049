package main

import "strings"

// suggest is the known name closest to name, for a "did you mean" hint: one
// within two edits (or one typed as a prefix of at least three letters), or
// "" when none is that close.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if len(name) >= 3 && strings.HasPrefix(k, name) {
			return k
		}
		if d := editDistance(name, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// didYouMean is a hint to append to an "unknown" message, or "".
func didYouMean(name string, known []string) string {
	if s := suggest(name, known); s != "" {
		return "; did you mean " + s + "?"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, with a swap of
// two neighbouring letters counted as one edit (the commonest typo).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
