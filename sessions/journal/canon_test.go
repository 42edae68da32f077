package journal

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// canonText writes v as %+v would, but leaves out struct fields holding
// their zero value, so that a field added to a payload since a journal
// was written (zero in what that journal reads as) does not change its
// description. Errors print as their message, times in RFC 3339 with
// nanoseconds, map keys sorted.
func canonText(v any) string {
	var b strings.Builder
	canonValue(&b, reflect.ValueOf(v))
	return b.String()
}

var (
	canonErrorType = reflect.TypeFor[error]()
	canonTimeType  = reflect.TypeFor[time.Time]()
)

func canonValue(b *strings.Builder, v reflect.Value) {
	if !v.IsValid() {
		b.WriteString("<nil>")
		return
	}
	if v.Type() == canonTimeType {
		b.WriteString(v.Interface().(time.Time).Format(time.RFC3339Nano))
		return
	}
	if v.Kind() != reflect.Struct && v.CanInterface() && v.Type().Implements(canonErrorType) {
		if (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		b.WriteString("error(" + v.Interface().(error).Error() + ")")
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			b.WriteString("<nil>")
			return
		}
		b.WriteString("&")
		canonValue(b, v.Elem())
	case reflect.Struct:
		b.WriteString("{")
		first := true
		for i := range v.NumField() {
			f := v.Field(i)
			if f.IsZero() {
				continue
			}
			if !first {
				b.WriteString(" ")
			}
			first = false
			b.WriteString(v.Type().Field(i).Name + ":")
			if !f.CanInterface() {
				fmt.Fprintf(b, "%v", f)
				continue
			}
			canonValue(b, f)
		}
		b.WriteString("}")
	case reflect.Slice, reflect.Array:
		b.WriteString("[")
		for i := range v.Len() {
			if i > 0 {
				b.WriteString(" ")
			}
			canonValue(b, v.Index(i))
		}
		b.WriteString("]")
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		b.WriteString("map[")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			canonValue(b, k)
			b.WriteString(":")
			canonValue(b, v.MapIndex(k))
		}
		b.WriteString("]")
	default:
		if v.CanInterface() {
			fmt.Fprintf(b, "%v", v.Interface())
		} else {
			fmt.Fprintf(b, "%v", v)
		}
	}
}
