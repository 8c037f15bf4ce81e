package api

import _ "embed"

// OpenAPI is the OpenAPI 3 document served at /api/v1/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte

//go:generate ../../bin/oapi-codegen -config oapi-codegen.yaml openapi.yaml
