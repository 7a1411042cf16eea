(function(){
// A model's marks in a chart (its line, points, whiskers, legend entry; not the labels).
function marks(svg,m){
  var out=[];
  svg.querySelectorAll("[data-model]").forEach(function(e){if(e.getAttribute("data-model")===m&&e.tagName!=="text")out.push(e);});
  return out;
}
// Highlights model m (none: null) over the others, drawn on top.
function highlight(svg,m){
  svg.querySelectorAll(".hl").forEach(function(e){e.classList.remove("hl");});
  svg.classList.toggle("hl-on",!!m);
  if(!m)return;
  marks(svg,m).forEach(function(e){e.classList.add("hl");if(e.parentNode===svg&&e.tagName!=="g")svg.appendChild(e);});
}
document.querySelectorAll("svg.chart.lines").forEach(function(svg){
  svg.querySelectorAll("g.legend[data-model]").forEach(function(g){
    g.addEventListener("click",function(){
      var m=g.getAttribute("data-model"),off=!g.classList.contains("bg");
      marks(svg,m).forEach(function(e){
        e.classList.toggle("bg",off);
        if(!off&&e!==g)e.parentNode.appendChild(e);
      });
    });
  });
  svg.addEventListener("mouseover",function(ev){
    var e=ev.target.closest("[data-model]");
    if(e&&svg.contains(e))highlight(svg,e.getAttribute("data-model"));
  });
  svg.addEventListener("mouseleave",function(){highlight(svg,svg.getAttribute("data-picked"));});
});
document.querySelectorAll("select[data-chart-pick]").forEach(function(sel){
  sel.addEventListener("change",function(){
    var svg=document.querySelector('svg.chart.lines[data-chart="'+CSS.escape(sel.getAttribute("data-chart-pick"))+'"]');
    if(!svg)return;
    if(sel.value)svg.setAttribute("data-picked",sel.value);else svg.removeAttribute("data-picked");
    highlight(svg,sel.value||null);
  });
});
})();
