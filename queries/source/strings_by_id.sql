-- strings_by_id: StringIds values for a list of ids ($ids).
SELECT id, value FROM n.strings WHERE id IN (SELECT unnest($ids::BIGINT[]));
