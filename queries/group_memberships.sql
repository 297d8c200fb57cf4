-- name: ListGroupMemberships :many
SELECT * FROM group_memberships ORDER BY group_id, user_id;

-- name: ListGroupMembershipsByGroup :many
SELECT * FROM group_memberships WHERE group_id = $1 ORDER BY user_id;
