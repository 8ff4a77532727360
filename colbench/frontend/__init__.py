"""ColBench Frontend Design: collaborative web page design with a simulated designer who sees
the target page; scored by the similarity of the two renders (CLIP, or a weight-free
perceptual score)."""
