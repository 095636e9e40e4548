package simengine

import "strconv"

func fmtF(f float64) string { return strconv.FormatFloat(f, 'g', 4, 64) }
