{{/*
crowsnest.nats.config: the nats-server configuration. Called with a dict of
"ctx" (the nats subchart's context), "name" (server name), "users" (user →
permissions, from files/permissions.json) and "passwords" (user → the
password as the configuration spells it: a quoted literal or a $VARIABLE).
The users block has the shape api/events/v1 ServerAuthorization renders;
the chart tests compare the two and run a real server with this file.
*/}}
{{- define "crowsnest.nats.config" -}}
port: 4222
http_port: 8222
server_name: {{ .name }}
jetstream {
  store_dir: /data/jetstream
  max_memory_store: {{ .ctx.Values.jetstream.maxMemoryStore }}
  max_file_store: {{ .ctx.Values.jetstream.maxFileStore }}
}
# Crowsnest's users only, each limited to its subjects. There is no
# no_auth_user: a client without a user and password is refused.
authorization {
  users = [
{{- range $user, $p := .users }}
    {"user": {{ $user | toRawJson }}, "password": {{ index $.passwords $user }}, "permissions": {{ dict "publish" (dict "allow" ($p.publishAllow | default list) "deny" ($p.publishDeny | default list)) "subscribe" (dict "allow" ($p.subscribeAllow | default list)) | toRawJson }}}
{{- end }}
  ]
}
{{- end -}}

{{/*
crowsnest.nats.passwordEnv: the environment variable that carries a user's
password into nats-server when the passwords come from an existing Secret.
*/}}
{{- define "crowsnest.nats.passwordEnv" -}}
{{- printf "NATS_PASSWORD_%s" (. | upper | replace "-" "_") -}}
{{- end -}}
