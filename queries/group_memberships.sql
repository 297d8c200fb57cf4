-- name: ListGroupMemberships :many
SELECT * FROM group_memberships ORDER BY group_id, user_id;

-- name: ListGroupMembershipsByGroup :many
SELECT * FROM group_memberships WHERE group_id = $1 ORDER BY user_id;

-- name: ListGroupMembershipsByUser :many
SELECT * FROM group_memberships WHERE user_id = $1 ORDER BY group_id;

-- name: GetGroupMembershipByGroupAndUser :one
SELECT * FROM group_memberships WHERE group_id = $1 AND user_id = $2;

-- name: InsertGroupMembership :one
INSERT INTO group_memberships (group_id, user_id) VALUES ($1, $2) RETURNING *;

-- name: DeleteGroupMembership :execrows
DELETE FROM group_memberships WHERE group_id = $1 AND user_id = $2;

-- name: ListGroupMembershipsPage :many
SELECT * FROM group_memberships
WHERE (group_id, user_id) > (sqlc.arg(after_group_id)::uuid, sqlc.arg(after_user_id)::uuid)
  AND (sqlc.narg(group_id)::uuid IS NULL OR group_id = sqlc.narg(group_id))
  AND (sqlc.narg(user_id)::uuid IS NULL OR user_id = sqlc.narg(user_id))
ORDER BY group_id, user_id
LIMIT sqlc.arg('limit')::int;
