package mockupstream

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// imagesRequest is what the mock reads of an images body (JSON or the
// fields of a multipart form).
type imagesRequest struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              *int   `json:"n"`
	Size           string `json:"size"`
	Quality        string `json:"quality"`
	ResponseFormat string `json:"response_format"`
}

// tinyPNG is a 1×1 transparent PNG, the image every answer holds.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

type imageDatum struct {
	B64JSON       string `json:"b64_json,omitempty"`
	URL           string `json:"url,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

type imagesUsage struct {
	TotalTokens        int64 `json:"total_tokens"`
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails struct {
		TextTokens  int64 `json:"text_tokens"`
		ImageTokens int64 `json:"image_tokens"`
	} `json:"input_tokens_details"`
}

type imagesResponse struct {
	Created int64        `json:"created"`
	Data    []imageDatum `json:"data"`
	Size    string       `json:"size,omitempty"`
	Quality string       `json:"quality,omitempty"`
	Usage   *imagesUsage `json:"usage,omitempty"`
}

// imageTokens is what one image of a size and quality costs in output
// tokens on a gpt-image model (OpenAI's table for 1024×1024: 272, 1056,
// 4160 for low, medium, high; other sizes half again).
func imageTokens(size, quality string) int64 {
	n := int64(4160)
	switch quality {
	case "low":
		n = 272
	case "medium":
		n = 1056
	}
	if size != "" && size != "auto" && size != "1024x1024" {
		n += n / 2
	}
	return n
}

// answerImages answers n images. gpt-image models bill tokens and report
// usage; dall-e models bill per image and report none.
func answerImages(w http.ResponseWriter, req *imagesRequest, inputImages int64) *apiError {
	n := 1
	if req.N != nil {
		n = *req.N
	}
	if n < 1 || n > 10 {
		return &apiError{kind: errInvalid, msg: "Invalid 'n': integer must be between 1 and 10.", param: "n", code: "integer_out_of_range"}
	}
	out := imagesResponse{Created: time.Now().Unix()}
	gptImage := strings.HasPrefix(req.Model, "gpt-image")
	for range n {
		if req.ResponseFormat == "url" && !gptImage {
			out.Data = append(out.Data, imageDatum{URL: "https://mock.invalid/images/" + randomID("img-", 24, alphaBase62) + ".png"})
		} else {
			out.Data = append(out.Data, imageDatum{B64JSON: tinyPNG})
		}
	}
	if gptImage {
		u := &imagesUsage{InputTokens: textTokens(req.Prompt) + 65*inputImages, OutputTokens: int64(n) * imageTokens(req.Size, req.Quality)}
		u.InputTokensDetails.TextTokens = textTokens(req.Prompt)
		u.InputTokensDetails.ImageTokens = 65 * inputImages
		u.TotalTokens = u.InputTokens + u.OutputTokens
		out.Usage = u
		out.Size, out.Quality = cmpOr(req.Size, "1024x1024"), cmpOr(req.Quality, "high")
	}
	writeJSON(w, out)
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// serveImageGenerations answers POST /v1/images/generations.
func serveImageGenerations(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	var req imagesRequest
	if e := readJSON(r, x, &req); e != nil {
		return e
	}
	x.model = req.Model
	if req.Prompt == "" {
		return missing("prompt")
	}
	req.Model = cmpOr(req.Model, "dall-e-2")
	return answerImages(w, &req, 0)
}

// serveImageEdits answers POST /v1/images/edits: a multipart form with one
// or more image parts (image, image[]) and a prompt.
func serveImageEdits(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	req, images, e := readImageForm(r, x)
	if e != nil {
		return e
	}
	if images == 0 {
		return missing("image")
	}
	if req.Prompt == "" {
		return missing("prompt")
	}
	return answerImages(w, req, images)
}

// serveImageVariations answers POST /v1/images/variations (dall-e-2).
func serveImageVariations(_ *Server, w http.ResponseWriter, r *http.Request, x *exchange) *apiError {
	req, images, e := readImageForm(r, x)
	if e != nil {
		return e
	}
	if images == 0 {
		return missing("image")
	}
	return answerImages(w, req, 0)
}

// readImageForm reads an images form as a stream: fields into the
// request, image parts counted and checked to be PNG or JPEG.
func readImageForm(r *http.Request, x *exchange) (*imagesRequest, int64, *apiError) {
	req := &imagesRequest{}
	var images int64
	f, e := readForm(r, x, func(name string) *string {
		switch name {
		case "model":
			return &req.Model
		case "prompt":
			return &req.Prompt
		case "size":
			return &req.Size
		case "quality":
			return &req.Quality
		case "response_format":
			return &req.ResponseFormat
		case "n":
			return new(string)
		}
		return nil
	}, func(name string, head []byte, size int64) *apiError {
		if name != "image" && name != "image[]" && name != "mask" {
			return nil
		}
		if name != "mask" {
			images++
		}
		if !isPNG(head) && !isJPEG(head) && !isWebP(head) {
			return &apiError{kind: errInvalid, msg: "Invalid image file or mode for image " + strconv.FormatInt(images, 10) + ", please check your image file.", param: name, code: "invalid_image_format"}
		}
		return nil
	})
	if e != nil {
		return nil, 0, e
	}
	if v, ok := f["n"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, 0, &apiError{kind: errInvalid, msg: "Invalid 'n'.", param: "n"}
		}
		req.N = &n
	}
	x.model = req.Model
	req.Model = cmpOr(req.Model, "dall-e-2")
	return req, images, nil
}

func isPNG(b []byte) bool  { return len(b) >= 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n" }
func isJPEG(b []byte) bool { return len(b) >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff }
func isWebP(b []byte) bool {
	return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP"
}
