module syncweave.dev/renderer-oracle

go 1.25.0

require k8s.io/apimachinery v0.35.0

require (
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/yaml v1.6.0 // indirect
)
