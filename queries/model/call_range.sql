-- call_range: the variable call_range ([lo, hi], inclusive) that a per-range step's queries read with
-- getvariable (a file's $parameters reach only its last statement). Parameters: $lo, $hi.
SET VARIABLE call_range = [$lo::BIGINT, $hi::BIGINT];
