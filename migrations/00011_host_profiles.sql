-- +goose Up
-- Host profiles (issue 25, docs/profiles.md): how Relay addresses and
-- authenticates a host beyond its binding shape — Azure OpenAI's deployment
-- URLs and Entra tokens, Vertex AI's project paths and service-account
-- tokens, Bedrock's SigV4, an OpenAI-compatible server's quirks. '' is the
-- plain public API of the binding's shape. profile_params are the profile's
-- non-secret strings (region, api_version, tenant_id …); the control API
-- checks names and values against the registry in package profile before
-- they get here. Secrets stay in host keys.
ALTER TABLE hosts
    ADD COLUMN profile text NOT NULL DEFAULT ''
        CONSTRAINT hosts_profile_check CHECK (length(profile) <= 64),
    ADD COLUMN profile_params jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT hosts_profile_params_check CHECK (jsonb_typeof(profile_params) = 'object');

-- +goose Down
ALTER TABLE hosts DROP COLUMN profile_params, DROP COLUMN profile;
