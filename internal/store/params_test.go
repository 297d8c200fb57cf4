package store

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestParams_EveryColumn checks that each params builder fills every field of
// its params struct from the row field of the same name, so a column a
// migration adds to a query cannot silently be written as its zero value.
func TestParams_EveryColumn(t *testing.T) {
	t.Parallel()
	checkParams(t, insertBindingParams)
	checkParams(t, updateBindingParams)
	checkParams(t, insertBudgetParams)
	checkParams(t, insertHostKeyParams)
	checkParams(t, updateHostKeyParams)
	checkParams(t, insertHostParams)
	checkParams(t, updateHostParams)
	checkParams(t, insertModelParams)
	checkParams(t, updateModelParams)
	checkParams(t, insertPolicyParams)
	checkParams(t, updatePolicyParams)
	checkParams(t, insertPolicyBindingParams)
	checkParams(t, updatePolicyBindingParams)
	checkParams(t, insertRateLimitRuleParams)
	checkParams(t, updateRateLimitRuleParams)
	checkParams(t, insertRelayKeyParams)
	checkParams(t, updateRelayKeyParams)
	checkParams(t, insertRoleBindingParams)
	checkParams(t, updateRoleBindingParams)
	checkParams(t, updateUserParams)
}

func checkParams[R, P any](t *testing.T, params func(R) P) {
	t.Helper()
	var r R
	rv := reflect.ValueOf(&r).Elem()
	for i := range rv.NumField() {
		fill(rv.Field(i), i+1)
	}
	pv := reflect.ValueOf(params(r))
	for i := range pv.NumField() {
		name := pv.Type().Field(i).Name
		want := rv.FieldByName(name)
		switch got := pv.Field(i); {
		case !want.IsValid():
			t.Errorf("%s.%s: %s has no such field", pv.Type().Name(), name, rv.Type().Name())
		case got.IsZero() || !reflect.DeepEqual(got.Interface(), want.Interface()):
			t.Errorf("%s.%s = %v, want the row's %v", pv.Type().Name(), name, got.Interface(), want.Interface())
		}
	}
}

// fill sets v to a non-zero value that differs with seed.
func fill(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), seed)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), seed+i)
		}
	case reflect.Uint8:
		v.SetUint(uint64(seed))
	case reflect.Struct:
		if v.Type() != reflect.TypeFor[time.Time]() {
			panic("fill: unexpected struct " + v.Type().String())
		}
		v.Set(reflect.ValueOf(time.Unix(int64(seed), 0)))
	default:
		panic("fill: unexpected kind " + v.Kind().String())
	}
}
