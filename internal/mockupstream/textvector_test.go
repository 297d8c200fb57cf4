package mockupstream

import "testing"

func cosine(a, b []float32) float64 {
	var d float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
	}
	return d // both are unit vectors
}

func TestTextVector_ParaphrasesAreNear(t *testing.T) {
	q := textVector("m", "What is the capital city of France?", 256)
	if c := cosine(q, textVector("m", "what is the capital city of france", 256)); c < 0.999 {
		t.Errorf("case and punctuation moved the vector: %.3f", c)
	}
	if c := cosine(q, textVector("m", "What is the capital of France?", 256)); c < 0.85 {
		t.Errorf("a paraphrase is far: %.3f", c)
	}
	if c := cosine(q, textVector("m", "How do I reset my password?", 256)); c > 0.4 {
		t.Errorf("another question is near: %.3f", c)
	}
	if c := cosine(q, textVector("other-model", "What is the capital city of France?", 256)); c > 0.5 {
		t.Errorf("another model embeds the same way: %.3f", c)
	}
}
